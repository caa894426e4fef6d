"""The receiver procedures (spec: receiving a Message, acks, finishing, closing).

Routing a Message: to the live receiver of its channel; else, for a channel
the peer minted, to a new auto-created ("unclaimed") receiver (unless the
channel is in the recently-discarded filter), which opens its control stream
at once; else (a channel we minted) the message is dropped. Processing it
creates or claims the halves it attaches, queues it for the application and
owes an ack (AckReliable / AckNackUnreliable, batched within ack_delay).
Unreliable numbers still missing max(nack_timeout, 2*RTT) after the
SentUnreliable that declared them are nacked, and never delivered later.
The ack timer always holds what `_rx_schedule` would set; the next message
of an open channel (nothing attached, room queued) takes a short path that
reschedules only when that may change (`_queue_reliable`,
`_queue_unreliable`; `_queue_run` for a stream chunk's run of them). Every
path queues through the receiver's one MessageQueue (queue.py), which keeps
each message as the Delivered the application will get, with its credit.

Closing (finish complete, sender cancelled, or the application): owed
unreliable acks, CloseReceiver (ranges from the AckReliable start), FIN;
a close waits for the control stream. After FINISHED the queue stays
takeable; after any other end it is discarded, dropping the halves its
messages carry (iteratively: queues nest). An unclaimed receiver that ends
lingers until the message that creates it arrives or ClosedChannelLost.
"""

# mypy: disable-error-code="misc"
from __future__ import annotations

from collections import deque
from itertools import repeat
from typing import TYPE_CHECKING

from ..errors import EndReason, ResetCode
from ..wire.channel_id import ENTRYPOINT, ChannelId
from ..wire.errors import ProtocolError
from ..wire.frames import (
    AckNackUnreliable,
    AckReliable,
    ChannelControl,
    CloseReceiver,
    FinishSender,
    Frame,
    Message,
    SentUnreliable,
    encode_frame,
)
from .app import Attachment, Delivered, Delivery, MessageAvailable, ReceiverEnded, SenderEnded
from .queue import MessageQueue
from .receiver import Receiver, RState
from .streams import Role

if TYPE_CHECKING:
    from .engine import Engine
    from .streams import StreamRec

_ROPEN = RState.OPEN
_ORDERED = Delivery.ORDERED
_UNRELIABLE = Delivery.UNRELIABLE


class QueueFull(Exception):
    """Internal: a reliable message found its receiver's queue full; its stream waits."""

    def __init__(self, receiver: int) -> None:
        super().__init__(receiver)
        self.receiver = receiver


class ReceivingMixin:
    """Receiver-side procedures."""

    def _create_receiver(self: Engine, channel: ChannelId, claimed: bool) -> Receiver:
        """A receiver for a channel the peer minted: reachable; we open its control stream."""
        if not claimed and len(self._halves.unclaimed) >= self.config.max_pending_receivers:
            self._limit(f"more than max_pending_receivers={self.config.max_pending_receivers} auto-created receivers")
        self._check_channel_limit(1)
        r = self._halves.add_receiver(channel, exposed=False, claimed=claimed)
        r.ctrl = self._streams.open_bidi(encode_frame(ChannelControl(channel)), Role.TO_RECEIVER, r.handle)
        r.ctrl_open = True
        return r

    def _check_channel_limit(self: Engine, more: int) -> None:
        if self._halves.count() + more > self.config.max_channels:
            self._limit(f"the peer made us exceed max_channels={self.config.max_channels}")

    # ---- messages ----
    def _on_message(self: Engine, m: Message, reliable: bool, credit_sid: int | None, size: int) -> bool:
        """Route and process one Message; return whether it was queued (its credit then waits)."""
        channel = m.channel
        if not m.attachments:
            if not reliable:
                if self._queue_unreliable(channel, m.number, m.payload):
                    return False
            elif self._queue_reliable(channel, m.number, m.payload, credit_sid, size):
                return credit_sid is not None
        found = self._halves.rx_of.get(channel)
        if m.number != 0 and ChannelId(channel).oneshot:
            raise ProtocolError(f"Message number {m.number} on oneshot channel {ChannelId(channel)}")
        if found is None:
            cid = ChannelId(channel)
            if cid.to is not self._side:
                raise ProtocolError(f"Message on channel {cid}, whose receiver would be the sender's own side")
            if cid.minted_by is self._side or channel in self._halves.unclaimed or self._halves.was_claimed(channel):
                return False  # a receiver for it was handed out and is gone: no ghost
            if self._halves.recently_discarded(channel):
                return False
            r = self._create_receiver(cid, claimed=False)
        else:
            r = found  # a receiver exists only for channels flowing to us
        n = m.number
        if reliable:
            if r.has_reliable(n):
                raise ProtocolError(f"reliable message {n} on channel {channel} received twice")
            if r.finish_count is not None and n >= r.finish_count:
                raise ProtocolError(f"reliable message {n} on channel {channel} beyond its FinishSender count")
        else:
            if n < r.unrel_start or n in r.unrel_received:
                return False  # nacked already (or a duplicate): never delivered
            if r.finish_count is not None and n >= r.declared:
                raise ProtocolError(f"unreliable message {n} on channel {channel} beyond the declared count")
        if r.oneshot and r.messages_seen:
            raise ProtocolError(f"second message on oneshot channel {channel}")
        queue = r.queue
        if queue is None:
            queue = r.queue = MessageQueue(self._queue_max, self._queue_max_bytes)
        if not queue.has_room(1, len(m.payload)):
            if not reliable:
                return False  # dropped: it will be nacked like a lost datagram
            if not queue:
                self._limit(f"a message on channel {channel} is larger than a receiver queue may hold")
            raise QueueFull(r.handle)
        attachments = self._take_attachments(m.attachments)
        r.messages_seen += 1
        if reliable:
            r.mark_reliable(n)
        else:
            r.unrel_received.add(n, n + 1)
        if r.ack_due is None:
            r.ack_due = self._ctx.now + self.config.ack_delay
        # the wire does not tell ordered from unordered stream messages: both read as ORDERED
        delivery = Delivery.ORDERED if reliable else Delivery.UNRELIABLE
        was_empty = not queue
        queue.put((Delivered(m.payload, attachments, r.channel, n, delivery), credit_sid, size), len(m.payload))
        if r.close_reason is not None:
            self._discard_queues([r], lost=False)  # returns its credit: report it as deferred
        elif was_empty and r.exposed and not r.app_dropped:
            self._out.event(MessageAvailable(r.handle))
        if r.state is RState.FINISHING:
            self._check_finished(r)
        if not (reliable and not r.declarations and self._timers.armed_at(("rx", r.handle)) == r.ack_due):
            self._rx_schedule(r)
        return credit_sid is not None

    def _queue_reliable(self: Engine, channel: int, n: int, payload: bytes, credit_sid: int | None, size: int) -> bool:
        """The hot path for a reliable message without attachments: queue it (holding `size` credit of stream
        `credit_sid`) as `_on_message` would if its channel's receiver is open, it is the next in order and the
        queue has room; else False (nothing changed: the general path takes it)."""
        r = self._rx_of.get(channel)
        if r is None:
            return False
        if (
            n != r.done_prefix
            or r.state is not _ROPEN
            or r.oneshot
            or r.finish_count is not None
            or r.close_reason is not None
            or r.rel_done
        ):
            return False
        queue = r.queue
        if queue is None:  # (the first message: an idle receiver holds no queue)
            queue = r.queue = MessageQueue(self._queue_max, self._queue_max_bytes)
        if not queue.offer((Delivered(payload, (), r.channel, n, _ORDERED), credit_sid, size), len(payload)):
            return False
        # The timer always holds what _rx_schedule would set; if acks were owed already (with their time set),
        # one more number to ack leaves that unchanged.
        ack_due = r.ack_due
        owed = ack_due is not None and bool(r.rel_pending)
        if ack_due is None:
            r.ack_due = self._ctx.now + self.config.ack_delay
        r.messages_seen += 1
        r.rel_pending.add_one(n)
        r.done_prefix = n + 1
        if len(queue) == 1 and r.exposed and not r.app_dropped:
            self._out.event(MessageAvailable(r.handle))
        if not owed:
            self._rx_schedule(r)
        return True

    def _queue_unreliable(self: Engine, channel: int, n: int, payload: bytes) -> bool:
        """The hot path for an unreliable message without attachments: queue it as `_on_message` would if its
        channel's receiver is open, it is past every number received and the queue has room; else False (nothing
        changed: the general path takes it)."""
        r = self._rx_of.get(channel)
        if r is None:
            return False
        if r.state is not _ROPEN or r.oneshot or r.finish_count is not None or r.close_reason is not None:
            return False
        start = r.unrel_start
        received = r.unrel_received
        if n < start or n < received.max_stop():
            return False
        queue = r.queue
        if queue is None:  # (the first message: an idle receiver holds no queue)
            queue = r.queue = MessageQueue(self._queue_max, self._queue_max_bytes)
        if not queue.offer((Delivered(payload, (), r.channel, n, _UNRELIABLE), None, 0), len(payload)):
            return False
        # The timer always holds what _rx_schedule would set; if acks were owed already (with their time set),
        # one more number to ack leaves that unchanged.
        ack_due = r.ack_due
        owed = ack_due is not None and (start < r.nack_upto or start in received or bool(r.rel_pending))
        if ack_due is None:
            r.ack_due = self._ctx.now + self.config.ack_delay
        r.messages_seen += 1
        received.add_one(n)
        if len(queue) == 1 and r.exposed and not r.app_dropped:
            self._out.event(MessageAvailable(r.handle))
        if not owed:
            self._rx_schedule(r)
        return True

    def _queue_run(
        self: Engine, rec: StreamRec, r: Receiver, first: int, payloads: list[bytes], sizes: list[int]
    ) -> int:
        """Queue the plain reliable messages `first`, `first`+1, ... of stream `rec` (wire `sizes`; the first's
        credit is less `rec.pre`) as `_on_message` would one by one, while `r` is open, they are next in order and
        its queue has room; return how many were queued (0: nothing changed, the general path takes them)."""
        if (
            r.state is not _ROPEN
            or first != r.done_prefix
            or r.finish_count is not None
            or r.close_reason is not None
            or r.rel_done
        ):
            return 0
        queue = r.queue
        if queue is None:
            queue = r.queue = MessageQueue(self._queue_max, self._queue_max_bytes)
        k = len(sizes)
        nbytes = len(payloads[0]) if k == 1 else sum(map(len, payloads))
        if not queue.has_room(k, nbytes):
            k, nbytes = queue.fitting(payloads)
            if not k:
                return 0
            payloads = payloads[:k]
            sizes = sizes[:k]
        owed = r.ack_due is not None and bool(r.rel_pending)
        was_empty = not queue
        r.messages_seen += k
        r.rel_pending.add(first, first + k)
        r.done_prefix = first + k
        if r.ack_due is None:
            r.ack_due = self._ctx.now + self.config.ack_delay
        if rec.pre:
            sizes = [sizes[0] - rec.pre, *sizes[1:]]
            rec.pre = 0
        channel = r.channel
        sid = rec.stream_id
        if k == 1:  # (building the iterators below costs more than one message)
            queue.put((Delivered(payloads[0], (), channel, first, _ORDERED), sid, sizes[0]), nbytes)
            rec.outstanding += sizes[0]
        else:
            queue.put_run(
                zip(
                    map(Delivered, payloads, repeat(()), repeat(channel), range(first, first + k), repeat(_ORDERED)),
                    repeat(sid),
                    sizes,
                ),
                nbytes,
            )
            rec.outstanding += sum(sizes)
        rec.frames_seen += k
        rec.reader.frames_read += k
        if was_empty and r.exposed and not r.app_dropped:
            self._out.event(MessageAvailable(r.handle))
        if not owed:
            self._rx_schedule(r)
        return k

    def _take_attachments(self: Engine, ids: tuple[int, ...]) -> tuple[Attachment, ...]:
        out: list[Attachment] = []
        for index, raw in enumerate(ids):
            a = ChannelId(raw)
            if a.minted_by is self._side:
                raise ProtocolError(f"attachment {a} was minted by the side receiving it")
            if a == ENTRYPOINT:
                raise ProtocolError("the entrypoint channel cannot be attached")
            if a.to is self._side:
                pending = self._halves.claim(a)
                if pending is not None:
                    h = pending.handle
                elif a in self._halves.rx_of:
                    raise ProtocolError(f"receiver of channel {a} handed out twice")
                else:
                    h = self._create_receiver(a, claimed=True).handle
                self._halves.mark_claimed(a)
                out.append(Attachment(index, a, False, h))
            else:
                if a in self._halves.tx_of:
                    raise ProtocolError(f"sender of channel {a} attached twice")
                self._check_channel_limit(1)
                out.append(Attachment(index, a, True, self._tx.create_remote(a).handle))
        return tuple(out)

    # ---- control stream ----
    def _receiver_attached(self: Engine, r: Receiver, sid: int) -> None:
        """The peer opened our control stream; a first frame tells it we read its ChannelControl."""
        r.ctrl = sid
        r.ctrl_open = True
        if r.close_reason is not None:
            self._close_receiver(r, r.close_reason)
        else:
            self._streams.write(sid, encode_frame(AckNackUnreliable(())))
            self._rx_schedule(r)

    def _receiver_frame(self: Engine, r: Receiver, frame: Frame) -> None:
        if r.state is RState.GONE:
            return
        if isinstance(frame, SentUnreliable):
            if not frame.count:
                return
            r.declared += frame.count
            deadline = self._ctx.now + max(self.config.nack_timeout, 2 * self._ctx.rtt)
            decl = r.declarations
            if decl is None:
                decl = r.declarations = deque()
            last = decl[-1] if decl else None
            if last is not None and deadline - last[2] <= self.config.ack_delay:
                # coalesce within ack_delay: entries stay bounded, nothing is nacked early
                decl[-1] = (r.declared, deadline, last[2])
            else:
                decl.append((r.declared, deadline, deadline))
            self._rx_schedule(r)
        elif isinstance(frame, FinishSender):
            if r.rel_done.max_stop() > frame.reliable_count or r.done_prefix > frame.reliable_count:
                raise ProtocolError(f"FinishSender count {frame.reliable_count} below a message already received")
            if r.unrel_received.max_stop() > r.declared or r.unrel_start > r.declared:
                raise ProtocolError("FinishSender before declaring every unreliable message received")
            r.finish_count = frame.reliable_count
            r.state = RState.FINISHING
            self._check_finished(r)
        else:
            raise ProtocolError(f"{type(frame).__name__} sent to a receiver")

    def _receiver_ctrl_reset(self: Engine, r: Receiver, code: int) -> None:
        if r.state is RState.GONE:
            return
        if code == ResetCode.CANCELLED:
            self._close_receiver(r, EndReason.CANCELLED)
        else:
            self._receiver_lost(r)

    # ---- timers and acks ----
    def _rx_schedule(self: Engine, r: Receiver) -> None:
        key = ("rx", r.handle)
        if r.state is RState.GONE or not r.ctrl_open:
            self._timers.cancel(key)
            return
        when: float | None = None
        start = r.unrel_start
        if r.rel_pending or start < r.nack_upto or start in r.unrel_received:  # i.e. decided_end() > start
            when = r.ack_due if r.ack_due is not None else self._ctx.now
        for upto, deadline, _ in r.declarations or ():
            if upto > r.nack_upto:
                when = deadline if when is None else min(when, deadline)
                break
        if when is None:
            self._timers.cancel(key)
        else:
            self._timers.set(key, when)

    def _receiver_due(self: Engine, handle: int) -> None:
        r = self._receivers.get(handle)
        if r is None or r.state is RState.GONE or not r.ctrl_open:
            return
        nacked = False
        while r.declarations and r.declarations[0][1] <= self._ctx.now:
            upto = r.declarations.popleft()[0]
            if upto > r.nack_upto:
                r.nack_upto = upto
                nacked = True
        if nacked or (r.ack_due is not None and r.ack_due <= self._ctx.now):
            self._flush_acks(r)
        if r.state is RState.FINISHING:
            self._check_finished(r)
        self._rx_schedule(r)

    def _flush_acks(self: Engine, r: Receiver) -> None:
        assert r.ctrl is not None
        frames: list[bytes] = []
        rel = r.take_ack_reliable()
        if rel is not None:
            frames.append(encode_frame(AckReliable(rel)))
        unrel = r.take_acknack(r.decided_end())
        if unrel is not None:
            frames.append(encode_frame(AckNackUnreliable(unrel)))
        r.ack_due = None
        if frames:
            self._streams.write(r.ctrl, b"".join(frames))

    def _check_finished(self: Engine, r: Receiver) -> None:
        if r.state is RState.FINISHING and r.all_accounted():
            self._close_receiver(r, EndReason.FINISHED)

    # ---- closing ----
    def _close_receiver(self: Engine, r: Receiver, reason: EndReason, *, discard: bool = True) -> None:
        """The close procedure (waits for the control stream); the queue goes unless the channel finished."""
        if r.state is RState.GONE:
            return
        if discard and reason is not EndReason.FINISHED:
            self._discard_queues([r], lost=False)
        if r.ctrl is None or not r.ctrl_open:
            r.close_reason = reason
            return
        frames: list[bytes] = []
        unrel = r.take_acknack(max(r.unrel_received.max_stop(), r.unrel_start))
        if unrel:
            frames.append(encode_frame(AckNackUnreliable(unrel)))
        frames.append(encode_frame(CloseReceiver(r.close_ranges())))
        r.ctrl_open = False
        self._streams.write(r.ctrl, b"".join(frames), fin=True)
        self._end_receiver(r, reason)

    def _receiver_lost(self: Engine, r: Receiver) -> None:
        """Cascading loss (or a 'lost' reset) on a receiver: reset, cease, drop what it queued."""
        if r.state is RState.GONE:
            return
        if r.ctrl is not None and r.ctrl_open:
            r.ctrl_open = False
            self._streams.reset(r.ctrl, ResetCode.LOST)
        self._end_receiver(r, EndReason.LOST)
        self._discard_queues([r], lost=True)

    def _end_receiver(self: Engine, r: Receiver, reason: EndReason) -> None:
        r.state = RState.GONE
        if r.handle in self._stalls:
            self._resume.add(r.handle)
        r.end_reason = reason
        self._halves.receiver_ended(r)
        self._timers.cancel(("rx", r.handle))
        if r.ctrl is not None:
            self._streams.unbind(r.ctrl)
        ghost = self._halves.was_claimed(r.channel)
        if not r.claimed and (reason is EndReason.LOST or ghost) and self._halves.unclaimed.get(r.channel) is r:
            self._halves.drop_pending(r.channel)  # others are kept for their creating message
            r.app_dropped = True
            if reason is EndReason.FINISHED:
                self._discard_queues([r], lost=False)  # a finished ghost: nobody will take its messages
        self._report_receiver_end(r)
        self._maybe_forget_receiver(r)

    def _report_receiver_end(self: Engine, r: Receiver) -> None:
        if r.exposed and not r.end_reported and r.end_reason is not None:
            r.end_reported = True
            if not r.app_dropped:
                self._out.event(ReceiverEnded(r.handle, r.end_reason))

    def _maybe_forget_receiver(self: Engine, r: Receiver) -> None:
        if r.state is RState.GONE and r.app_dropped:
            self._halves.forget_receiver(r)

    def _discard_queues(self: Engine, start: list[Receiver], *, lost: bool) -> None:
        """Drop every queued message of `start`, and the halves they carry, through nested queues."""
        work = list(start)
        while work:
            r = work.pop()
            if r.handle in self._stalls:
                self._resume.add(r.handle)
            queue = r.queue
            while queue:
                d, sid, credit = queue.take()
                self._credit_taken(sid, credit)
                for att in d.attachments:
                    if att.is_sender:
                        s = self._senders.get(att.handle)
                        if s is not None:
                            self._tx.abandon(s, lost=lost)
                    else:
                        inner = self._receivers.get(att.handle)
                        if inner is None:
                            continue
                        inner.app_dropped = True
                        if inner.state is not RState.GONE:
                            if lost:
                                if inner.ctrl is not None and inner.ctrl_open:
                                    inner.ctrl_open = False
                                    self._streams.reset(inner.ctrl, ResetCode.LOST)
                                self._end_receiver(inner, EndReason.LOST)
                            else:
                                self._close_receiver(inner, EndReason.CLOSED, discard=False)
                        self._maybe_forget_receiver(inner)
                        work.append(inner)

    # ---- application ----
    def _take(self: Engine, r: Receiver) -> Delivered | None:
        if not r.queue:
            return None
        if r.handle in self._stalls:
            self._resume.add(r.handle)
        d, sid, credit = r.queue.take()
        self._credit_taken(sid, credit)
        for att in d.attachments:
            self._expose(att)
        return d

    def _expose(self: Engine, att: Attachment) -> None:
        """The application now holds this half: report what it missed."""
        if att.is_sender:
            s = self._senders.get(att.handle)
            if s is not None and not s.exposed:
                s.exposed = True
                if s.end_reported and s.end_reason is not None:
                    self._out.event(SenderEnded(s.handle, s.end_reason))
            return
        r = self._receivers.get(att.handle)
        if r is not None and not r.exposed:
            r.exposed = True
            if r.queue:
                self._out.event(MessageAvailable(r.handle))
            self._report_receiver_end(r)

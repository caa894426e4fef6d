"""Receiving a Message (spec: "Message" processing on the receiver side, "ghost receivers", attachments).

Routing: to the live receiver of its channel; else, for a channel the peer
minted, to a new auto-created ("unclaimed") receiver (unless the channel is
in a ghost filter, halves.py), which opens its control stream at once; else
(a channel we minted) the message is dropped. Processing it checks it
against the ledger (a duplicate, a number beyond FinishSender, a second
message on a oneshot channel are protocol errors; an unreliable number
already nacked is dropped), creates or claims the halves it attaches,
queues it for the application and marks it owed an ack; the ack timer is
rescheduled only when that may move it.

Backpressure: a reliable message that finds its queue full raises
QueueFull before changing anything; incoming.py stalls its stream (flow.py).
An unreliable one is dropped and will be nacked like a lost datagram.

Short paths: the next message of an open channel, nothing attached, room
queued, takes `queue_reliable` / `queue_unreliable` (`queue_run` for a
stream chunk's run of them), which do exactly what `on_message` would
(tests/core/test_hot_paths.py). Every path queues through the receiver's
one MessageQueue (queue.py), which keeps each message as the Delivered the
application will get, with its credit.

This module writes what arrives (a receiver's queue, `messages_seen`, its
ledger through the ledger's methods); receiving.py owns the rest.
"""

from __future__ import annotations

from itertools import repeat

from ..wire.channel_id import ENTRYPOINT, ChannelId
from ..wire.errors import CloseCode, ProtocolError
from ..wire.frames import Message
from ..wire.ranges import MAX_RANGE_END
from .app import Attachment, Delivered, Delivery, MessageAvailable
from .context import Context
from .halves import Halves
from .queue import MessageQueue
from .receiver import Receiver, RState
from .receiving import Receivers
from .sending import Senders
from .streams import StreamRec

_ROPEN = RState.OPEN
_ORDERED = Delivery.ORDERED
_UNRELIABLE = Delivery.UNRELIABLE


class QueueFull(Exception):
    """Internal: a reliable message found its receiver's queue full; its stream waits."""

    def __init__(self, receiver: int) -> None:
        super().__init__(receiver)
        self.receiver = receiver


class Intake:
    """Messages in, queued for the application."""

    def __init__(self, ctx: Context, halves: Halves, rx: Receivers, tx: Senders) -> None:
        self._ctx = ctx
        self._out = ctx.out
        self._config = ctx.config
        self._side = ctx.side
        self._halves = halves
        self._rx_of = halves.rx_of
        self._rx = rx
        self._tx = tx
        self._queue_max = ctx.config.max_receiver_queue_messages
        self._queue_max_bytes = ctx.config.max_receiver_queue_bytes
        self._overhead = ctx.config.held_item_overhead
        self._ack_delay = ctx.config.ack_delay

    def on_message(self, m: Message, reliable: bool, credit_sid: int | None, size: int) -> bool:
        """Route and process one Message; return whether it was queued (its credit then waits)."""
        channel = m.channel
        if not m.attachments:
            if not reliable:
                if self.queue_unreliable(channel, m.number, m.payload):
                    return False
            elif self.queue_reliable(channel, m.number, m.payload, credit_sid, size):
                return credit_sid is not None
        if m.number >= MAX_RANGE_END:
            raise ProtocolError(f"message number {m.number} on channel {ChannelId(channel)}: its ack would end at "
                                "2^64, past the var len int")
        found = self._rx_of.get(channel)
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
            r = self._rx.create(cid, claimed=False)
        else:
            r = found  # a receiver exists only for channels flowing to us
        n = m.number
        acks = r.acks or r.ledger()
        if reliable:
            if acks.has_reliable(n):
                raise ProtocolError(f"reliable message {n} on channel {channel} received twice")
            if acks.finish_count is not None and n >= acks.finish_count:
                raise ProtocolError(f"reliable message {n} on channel {channel} beyond its FinishSender count")
        else:
            if n < acks.unrel_start or n in acks.unrel_received:
                return False  # nacked already (or a duplicate): never delivered
            if acks.finish_count is not None and n >= acks.declared:
                raise ProtocolError(f"unreliable message {n} on channel {channel} beyond the declared count")
        if r.oneshot and r.messages_seen:
            raise ProtocolError(f"second message on oneshot channel {channel}")
        queue = r.queue
        if queue is None:
            queue = r.queue = MessageQueue(self._queue_max, self._queue_max_bytes, self._overhead)
        if not queue.has_room(1, len(m.payload)):
            if not reliable:
                return False  # dropped: it will be nacked like a lost datagram
            if not queue:
                raise ProtocolError(
                    f"a message on channel {channel} is larger than a receiver queue may hold", CloseCode.LIMIT_EXCEEDED
                )
            raise QueueFull(r.handle)
        attachments = self._take_attachments(m.attachments)
        r.messages_seen += 1
        if reliable:
            acks.mark_reliable(n)
        else:
            acks.unrel_received.add(n, n + 1)
        self._rx.check_ranges(r)
        if acks.ack_due is None:
            acks.ack_due = self._ctx.now + self._ack_delay
        # the wire does not tell ordered from unordered stream messages: both read as ORDERED
        delivery = Delivery.ORDERED if reliable else Delivery.UNRELIABLE
        was_empty = not queue
        queue.put((Delivered(m.payload, attachments, r.channel, n, delivery), credit_sid, size), len(m.payload))
        if r.state is RState.CLOSE_WAIT:
            self._rx.discard_queues([r], lost=False)  # returns its credit: report it as deferred
        elif was_empty and r.exposed and not r.app_dropped:
            self._out.event(MessageAvailable(r.handle))
        if r.state is RState.FINISHING:
            self._rx.check_finished(r)
        if not (reliable and not acks.declarations and self._ctx.timers.armed_at(("rx", r.handle)) == acks.ack_due):
            self._rx.schedule(r)
        return credit_sid is not None

    def queue_reliable(self, channel: int, n: int, payload: bytes, credit_sid: int | None, size: int) -> bool:
        """The hot path for a reliable message without attachments: queue it (holding `size` credit of stream
        `credit_sid`) as `on_message` would if its channel's receiver is open, it is the next in order and the
        queue has room; else False (nothing changed: the general path takes it)."""
        r = self._rx_of.get(channel)
        if r is None:
            return False
        acks = r.acks or r.ledger()
        if (
            n != acks.done_prefix
            or r.state is not _ROPEN
            or r.oneshot
            or acks.finish_count is not None
            or acks.rel_done
        ):
            return False
        queue = r.queue
        if queue is None:  # (the first message: an idle receiver holds no queue)
            queue = r.queue = MessageQueue(self._queue_max, self._queue_max_bytes, self._overhead)
        if not queue.offer((Delivered(payload, (), r.channel, n, _ORDERED), credit_sid, size), len(payload)):
            return False
        # The timer always holds what Receivers.schedule would set; if acks were owed already (with their time
        # set), one more number to ack leaves that unchanged.
        ack_due = acks.ack_due
        owed = ack_due is not None and bool(acks.rel_pending)
        if ack_due is None:
            acks.ack_due = self._ctx.now + self._ack_delay
        r.messages_seen += 1
        acks.rel_pending.add_one(n)
        acks.done_prefix = n + 1
        if len(queue) == 1 and r.exposed and not r.app_dropped:
            self._out.event(MessageAvailable(r.handle))
        if not owed:
            self._rx.schedule(r)
        return True

    def queue_unreliable(self, channel: int, n: int, payload: bytes) -> bool:
        """The hot path for an unreliable message without attachments: queue it as `on_message` would if its
        channel's receiver is open, it is past every number received and the queue has room; else False (nothing
        changed: the general path takes it)."""
        r = self._rx_of.get(channel)
        if r is None:
            return False
        acks = r.acks or r.ledger()
        if r.state is not _ROPEN or r.oneshot or acks.finish_count is not None:
            return False
        start = acks.unrel_start
        received = acks.unrel_received
        top = received.max_stop()
        if n < start or n < top or n >= MAX_RANGE_END:
            return False
        queue = r.queue
        if queue is None:  # (the first message: an idle receiver holds no queue)
            queue = r.queue = MessageQueue(self._queue_max, self._queue_max_bytes, self._overhead)
        if not queue.offer((Delivered(payload, (), r.channel, n, _UNRELIABLE), None, 0), len(payload)):
            return False
        # The timer always holds what Receivers.schedule would set; if acks were owed already (with their time
        # set), one more number to ack leaves that unchanged.
        ack_due = acks.ack_due
        owed = ack_due is not None and (start < acks.nack_upto or start in received or bool(acks.rel_pending))
        if ack_due is None:
            acks.ack_due = self._ctx.now + self._ack_delay
        r.messages_seen += 1
        received.add_one(n)
        if n != top and len(received) > 1:  # (a gap: the peer picks the holes, so they are capped)
            self._rx.check_ranges(r)
        if len(queue) == 1 and r.exposed and not r.app_dropped:
            self._out.event(MessageAvailable(r.handle))
        if not owed:
            self._rx.schedule(r)
        return True

    def queue_run(self, rec: StreamRec, r: Receiver, first: int, payloads: list[bytes], sizes: list[int]) -> int:
        """Queue the plain reliable messages `first`, `first`+1, ... of stream `rec` (wire `sizes`; the first's
        credit is less `rec.pre`) as `on_message` would one by one, while `r` is open, they are next in order and
        its queue has room; return how many were queued (0: nothing changed, the general path takes them)."""
        acks = r.acks or r.ledger()
        if r.state is not _ROPEN or first != acks.done_prefix or acks.finish_count is not None or acks.rel_done:
            return 0
        queue = r.queue
        if queue is None:
            queue = r.queue = MessageQueue(self._queue_max, self._queue_max_bytes, self._overhead)
        k = len(sizes)
        nbytes = len(payloads[0]) if k == 1 else sum(map(len, payloads))
        if not queue.has_room(k, nbytes):
            k, nbytes = queue.fitting(payloads)
            if not k:
                return 0
            payloads = payloads[:k]
            sizes = sizes[:k]
        owed = acks.ack_due is not None and bool(acks.rel_pending)
        was_empty = not queue
        r.messages_seen += k
        acks.in_order(first, k)
        if acks.ack_due is None:
            acks.ack_due = self._ctx.now + self._ack_delay
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
                k,
            )
            rec.outstanding += sum(sizes)
        rec.frames_seen += k
        rec.reader.frames_read += k
        if was_empty and r.exposed and not r.app_dropped:
            self._out.event(MessageAvailable(r.handle))
        if not owed:
            self._rx.schedule(r)
        return k

    def _take_attachments(self, ids: tuple[int, ...]) -> tuple[Attachment, ...]:
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
                elif a in self._rx_of:
                    raise ProtocolError(f"receiver of channel {a} handed out twice")
                else:
                    h = self._rx.create(a, claimed=True).handle
                self._halves.mark_claimed(a)
                out.append(Attachment(index, a, False, h))
            else:
                if a in self._halves.tx_of:
                    raise ProtocolError(f"sender of channel {a} attached twice")
                self._rx.check_channel_limit(1)
                out.append(Attachment(index, a, True, self._tx.create_remote(a).handle))
        return tuple(out)

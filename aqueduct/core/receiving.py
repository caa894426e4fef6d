"""The receivers' life (spec: the receiver side of "Channel control streams", acks, "FinishSender",
the receiver's close procedure, "CloseReceiver", and the receiver's part of cascading loss).

Receivers is the only writer of a ReceiverRecord's fields but those of what
arrives (intake.py puts messages in the queue and marks them in the ledger)
and `claimed` (halves.py); the state moves only through `ReceiverRecord.move`.

Creation: a receiver for a channel the peer minted opens its control
stream at once (ChannelControl); one for a channel we minted waits for the
peer to open it, and a first frame tells the peer we read its ChannelControl:
whatever we write first, or an empty AckNackUnreliable when the input that
attached the stream ends with nothing written on it (`StreamTable.owe_first`).

Acks: the ack timer always holds what `schedule` would set: the earlier of
ack_due (ack_delay after the first ack became owed) and the next
declaration's nack deadline. When it runs (`due`), declarations whose
deadline passed nack what is still missing, and the decided acks and nacks
go out (acks.py computes them).

Closing (finish complete, sender cancelled, or the application): owed
unreliable acks, CloseReceiver (ranges from the AckReliable start), FIN; a
close waits for the control stream (CLOSE_WAIT). After FINISHED the queue
stays takeable; after any other end it is discarded, dropping the halves its
messages carry (iteratively: queues nest). An unclaimed receiver that ends
lingers until the message that creates it arrives or ClosedChannelLost.

The application's side: take (returning credit, exposing the halves a
message carries, reporting what they missed; with EngineConfig.ack_on_take
owing the acks of the reliable messages taken), refuse and accept_refused
(the application's verdict on messages it just took: acks.py), close, drop,
status.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ChannelClosed, EndReason, ResetCode
from ..wire.channel_id import ChannelId
from ..wire.errors import CloseCode, ProtocolError
from ..wire.frames import (
    AckNackUnreliable,
    AckReliable,
    ChannelControl,
    CloseReceiver,
    FinishSender,
    Frame,
    SentUnreliable,
    encode_frame,
)
from ..wire.ranges import MAX_RANGE_END
from .app import Attachment, Delivered, Delivery, MessageAvailable, ReceiverEnded
from .context import Context
from .flow import Flow
from .halves import Halves
from .receiver import ReceiverRecord, RState
from .sending import Senders
from .streams import Role, StreamTable
from .timers import ACKS

_GONE = RState.GONE
_UNRELIABLE = Delivery.UNRELIABLE
_EMPTY_ACKNACK = encode_frame(AckNackUnreliable(()))
"""A receiver's first frame on a control stream the peer opened, when it has nothing else to write."""


def reliable_runs(taken: Sequence[Delivered]) -> list[tuple[int, int]]:
    """The reliable numbers of `taken`, as (first, stop) runs of consecutive numbers, in order taken."""
    runs: list[tuple[int, int]] = []
    first = stop = -1
    for d in taken:
        if d.delivery is _UNRELIABLE:
            continue
        n = d.number
        if n == stop:
            stop += 1
            continue
        if stop > first:
            runs.append((first, stop))
        first, stop = n, n + 1
    if stop > first:
        runs.append((first, stop))
    return runs


class Receivers:
    """Receiver-side procedures for every receiver of one connection."""

    def __init__(self, ctx: Context, streams: StreamTable, halves: Halves, tx: Senders, flow: Flow) -> None:
        self._ctx = ctx
        self._out = ctx.out
        self._timers = ctx.timers
        self._config = ctx.config
        self._streams = streams
        self._halves = halves
        self._receivers = halves.receivers
        self._tx = tx
        self._flow = flow
        self._gapped: dict[int, int] = {}
        """Receiver handle -> ranges its ledger held when last noted, for those holding more than one."""
        self.ranges_total = 0
        """Ranges held by the ledgers in `_gapped` (the per-connection cap's figure; see note_ranges)."""

    # ---- creation ----
    def create(self, channel: ChannelId, claimed: bool) -> ReceiverRecord:
        """A receiver for a channel the peer minted: reachable; we open its control stream."""
        config = self._config
        if not claimed and len(self._halves.unclaimed) >= config.max_pending_receivers:
            raise ProtocolError(
                f"more than max_pending_receivers={config.max_pending_receivers} auto-created receivers",
                CloseCode.LIMIT_EXCEEDED,
            )
        self.check_channel_limit(1)
        r = self._halves.add_receiver(channel, exposed=False, claimed=claimed)
        r.ctrl = self._streams.open_bidi(encode_frame(ChannelControl(channel)), Role.TO_RECEIVER, r.handle)
        r.ctrl_open = True
        return r

    def create_entrypoint(self, channel: ChannelId) -> ReceiverRecord:
        """Server: the entrypoint receiver, handed to the application with the client's headers."""
        r = self.create(channel, claimed=True)
        self._halves.mark_claimed(channel)
        r.exposed = True
        return r

    def check_channel_limit(self, more: int) -> None:
        """The peer may not make us hold more than max_channels halves."""
        if self._halves.count() + more > self._config.max_channels:
            raise ProtocolError(
                f"the peer made us exceed max_channels={self._config.max_channels}", CloseCode.LIMIT_EXCEEDED
            )

    # ---- the control stream ----
    def attached(self, r: ReceiverRecord, sid: int) -> None:
        """The peer opened our control stream; a first frame tells it we read its ChannelControl."""
        r.ctrl = sid
        r.ctrl_open = True
        if r.state is RState.CLOSE_WAIT:
            assert r.close_reason is not None
            self.close(r, r.close_reason)
        else:
            self._streams.owe_first(sid, _EMPTY_ACKNACK)
            self.schedule(r)

    def on_frame(self, r: ReceiverRecord, frame: Frame) -> None:
        """A frame from the sender on the control stream: SentUnreliable, FinishSender."""
        if r.state is _GONE:
            return
        if isinstance(frame, SentUnreliable):
            if not frame.count:
                return
            ctx, config = self._ctx, self._config
            ledger = r.ledger()
            if ledger.declared + frame.count > MAX_RANGE_END:
                raise ProtocolError(f"SentUnreliable counts on channel {r.channel} pass 2^64 - 1: no ack could "
                                    "name those numbers")
            ledger.declare(frame.count, ctx.now + max(config.nack_timeout, 2 * ctx.rtt), config.ack_delay)
            self.schedule(r)
        elif isinstance(frame, FinishSender):
            r.ledger().finish(frame.reliable_count)
            r.move(RState.FINISHING)
            self.check_finished(r)
        else:
            raise ProtocolError(f"{type(frame).__name__} sent to a receiver")

    def on_ctrl_reset(self, r: ReceiverRecord, code: int) -> None:
        """The sender reset its direction: 'cancelled' closes, 'lost' loses."""
        if r.state is _GONE:
            return
        if code == ResetCode.CANCELLED:
            self.close(r, EndReason.CANCELLED)
        else:
            self.lose(r)

    # ---- the ack range caps (SECURITY.md) ----
    def check_ranges(self, r: ReceiverRecord) -> None:
        """After a message that may have left a gap: the per-channel cap (reliable holes past it close; the
        oldest unreliable ones are nacked now), then the per-connection sum."""
        acks = r.acks
        assert acks is not None
        cap = self._config.max_ack_ranges
        if acks.check_caps(cap, r.channel):
            if r.ctrl is None or not r.ctrl_open:
                raise ProtocolError(f"more than max_ack_ranges={cap} ranges of unreliable message numbers on "
                                    f"channel {r.channel} before its control stream", CloseCode.LIMIT_EXCEEDED)
            reliable = acks.ranges_held() - len(acks.unrel_received)
            acks.nack_oldest((cap - reliable) // 2)
            self._flush_acks(r)
            self.schedule(r)
        self.note_ranges(r)

    def note_ranges(self, r: ReceiverRecord) -> None:
        """Keep `ranges_total` (the ranges of every ledger holding more than one) current for `r`; past
        max_ack_ranges_per_connection the connection closes. Ledgers with at most one range (every in-order
        channel) are never looked at on the hot paths."""
        acks = r.acks
        held = acks.ranges_held() if acks is not None and r.state is not _GONE else 0
        old = self._gapped.get(r.handle, 0)
        if held <= 1 and not old:
            return
        self.ranges_total += held - old
        if held > 1:
            self._gapped[r.handle] = held
        else:
            del self._gapped[r.handle]
        cap = self._config.max_ack_ranges_per_connection
        if self.ranges_total > cap:
            raise ProtocolError(f"more than max_ack_ranges_per_connection={cap} ranges of message numbers held "
                                "for acks (the peer leaves gaps)", CloseCode.LIMIT_EXCEEDED)

    # ---- timers and acks ----
    def schedule(self, r: ReceiverRecord) -> None:
        """Arm the receiver's ack timer where its acks and declarations put it (or cancel it)."""
        key = (ACKS, r.handle)
        if r.state is _GONE or not r.ctrl_open:
            self._timers.cancel(key)
            return
        acks = r.acks
        if acks is None:  # nothing received, nothing declared: nothing owed
            self._timers.cancel(key)
            return
        when: float | None = None
        if acks.owed():
            when = acks.ack_due if acks.ack_due is not None else self._ctx.now
        deadline = acks.next_nack_deadline()
        if deadline is not None:
            when = deadline if when is None else min(when, deadline)
        if when is None:
            self._timers.cancel(key)
        else:
            self._timers.set(key, when)

    def due(self, handle: int) -> None:
        """The ack timer of a receiver ran out: nack what timed out, write the acks owed."""
        r = self._receivers.get(handle)
        if r is None or r.state is _GONE or not r.ctrl_open:
            return
        acks, now = r.acks, self._ctx.now
        if acks is not None and (acks.nacks_due(now) or (acks.ack_due is not None and acks.ack_due <= now)):
            self._flush_acks(r)
        if r.state is RState.FINISHING:
            self.check_finished(r)
        self.schedule(r)

    def _flush_acks(self, r: ReceiverRecord) -> None:
        assert r.ctrl is not None and r.acks is not None
        acks = r.acks
        frames: list[bytes] = []
        rel = acks.take_ack_reliable()
        if rel is not None:
            frames.append(encode_frame(AckReliable(rel)))
        unrel = acks.take_acknack(acks.decided_end())
        if unrel is not None:
            frames.append(encode_frame(AckNackUnreliable(unrel)))
        acks.acks_written()
        if frames:
            self._streams.write(r.ctrl, b"".join(frames))
        if r.handle in self._gapped:
            self.note_ranges(r)

    def check_finished(self, r: ReceiverRecord) -> None:
        """Finishing: once every message is accounted for, close with FINISHED."""
        if r.state is RState.FINISHING and r.acks is not None and r.acks.all_accounted():
            self.close(r, EndReason.FINISHED)

    # ---- closing ----
    def close(self, r: ReceiverRecord, reason: EndReason, *, discard: bool = True) -> None:
        """The close procedure (waits for the control stream); the queue goes unless the channel finished."""
        if r.state is _GONE:
            return
        if discard and reason is not EndReason.FINISHED:
            self.discard_queues([r], lost=False)
        if r.ctrl is None or not r.ctrl_open:
            if r.state is not RState.CLOSE_WAIT:
                r.move(RState.CLOSE_WAIT)
            r.close_reason = reason
            return
        acks = r.ledger()
        frames: list[bytes] = []
        unrel = acks.take_acknack(max(acks.unrel_received.max_stop(), acks.unrel_start))
        if unrel:
            frames.append(encode_frame(AckNackUnreliable(unrel)))
        frames.append(encode_frame(CloseReceiver(acks.close_ranges(queued_kept=reason is EndReason.FINISHED))))
        r.ctrl_open = False
        self._streams.write(r.ctrl, b"".join(frames), fin=True)
        self._end(r, reason)

    def lose(self, r: ReceiverRecord) -> None:
        """Cascading loss (or a 'lost' reset) on a receiver: reset, cease, drop what it queued."""
        if r.state is _GONE:
            return
        self._reset_lost(r)
        self.discard_queues([r], lost=True)

    def _reset_lost(self, r: ReceiverRecord) -> None:
        if r.ctrl is not None and r.ctrl_open:
            r.ctrl_open = False
            self._streams.reset(r.ctrl, ResetCode.LOST)
        self._end(r, EndReason.LOST)

    def _end(self, r: ReceiverRecord, reason: EndReason) -> None:
        r.move(_GONE)
        if r.handle in self._gapped:
            self.ranges_total -= self._gapped.pop(r.handle)
        self._flow.room(r.handle)
        r.end_reason = reason
        self._halves.receiver_ended(r)
        self._timers.cancel((ACKS, r.handle))
        if r.ctrl is not None:
            self._streams.unbind(r.ctrl)
        ghost = self._halves.was_claimed(r.channel)
        if not r.claimed and (reason is EndReason.LOST or ghost) and self._halves.unclaimed.get(r.channel) is r:
            self._halves.drop_pending(r.channel)  # others are kept for their creating message
            r.app_dropped = True
            if reason is EndReason.FINISHED:
                self.discard_queues([r], lost=False)  # a finished ghost: nobody will take its messages
        self._report_end(r)
        self._maybe_forget(r)

    def _report_end(self, r: ReceiverRecord) -> None:
        if r.exposed and not r.end_reported and r.end_reason is not None:
            r.end_reported = True
            if not r.app_dropped:
                self._out.event(ReceiverEnded(r.handle, r.end_reason))

    def _maybe_forget(self, r: ReceiverRecord) -> None:
        if r.state is _GONE and r.app_dropped:
            self._halves.forget_receiver(r)

    def discard_queues(self, start: list[ReceiverRecord], *, lost: bool) -> None:
        """Drop every queued message of `start`, and the halves they carry, through nested queues."""
        flow = self._flow
        work = list(start)
        while work:
            r = work.pop()
            flow.room(r.handle)
            queue = r.queue
            while queue:
                d, sid, credit = queue.take()
                flow.credit_taken(sid, credit)
                for att in d.attachments:
                    if att.is_sender:
                        self._tx.abandon_handle(att.handle, lost=lost)
                        continue
                    inner = self._receivers.get(att.handle)
                    if inner is None:
                        continue
                    inner.app_dropped = True
                    if inner.state is not _GONE:
                        if lost:
                            self._reset_lost(inner)
                        else:
                            self.close(inner, EndReason.CLOSED, discard=False)
                    self._maybe_forget(inner)
                    work.append(inner)

    def lost_notice(self, channel: ChannelId) -> None:
        """ClosedChannelLost(channel): the unclaimed receiver kept for it will never be handed out."""
        r = self._halves.drop_pending(channel)
        if r is None or self._receivers.get(r.handle) is not r:
            return
        if r.state is not _GONE:
            self.lose(r)
        r.app_dropped = True
        self.discard_queues([r], lost=True)
        self._maybe_forget(r)

    # ---- the application's calls ----
    def app_receiver(self, handle: int) -> ReceiverRecord:
        """The receiver behind an application handle (ChannelClosed if unknown or dropped)."""
        r = self._receivers.get(handle)
        if r is None or r.app_dropped:
            raise ChannelClosed(f"unknown or dropped receiver {handle}")
        return r

    def status(self, handle: int) -> EndReason | None:
        """None while the receiver is alive, else why it ended (as reported by ReceiverEnded)."""
        r = self._receivers.get(handle)
        if r is None:
            raise ChannelClosed(f"unknown or dropped receiver {handle}")
        return r.end_reason if r.end_reported else None

    def take(self, r: ReceiverRecord) -> Delivered | None:
        """The next queued message (its credit returned, its halves exposed, its ack owed if `ack_on_take`), or
        None."""
        if not r.queue:
            return None
        if self._ctx.closed:  # a finished channel's queue outlives the connection (teardown): no credit to give
            return r.queue.take()[0]
        self._flow.room(r.handle)
        d, sid, credit = r.queue.take()
        self._flow.credit_taken(sid, credit)
        for att in d.attachments:
            self.expose(att)
        if r.ack_on_take and r.state is not _GONE:
            self._owe_taken(r, (d,))
        return d

    def take_many(self, r: ReceiverRecord, limit: int) -> list[Delivered]:
        """Up to `limit` queued messages at once (what `limit` calls of `take` would return)."""
        out: list[Delivered] = []
        queue = r.queue
        if queue and self._ctx.closed:  # (as in `take`)
            return [d for d, _sid, _credit in queue.take_many(limit)]
        if queue and limit > 0:
            flow = self._flow
            flow.room(r.handle)
            run_sid: int | None = None  # credit is returned per run of messages from one stream
            run = 0
            append = out.append
            for d, sid, credit in queue.take_many(limit):
                if sid != run_sid:
                    flow.credit_taken(run_sid, run)
                    run_sid, run = sid, 0
                run += credit
                if d.attachments:
                    for att in d.attachments:
                        self.expose(att)
                append(d)
            flow.credit_taken(run_sid, run)
            if r.ack_on_take and r.state is not _GONE:
                self._owe_taken(r, out)
        return out

    def _owe_taken(self, r: ReceiverRecord, taken: Sequence[Delivered]) -> None:
        """`ack_on_take`: the application took these messages: the acks of the reliable ones are owed (within
        ack_delay)."""
        acks = r.ledger()
        owed = acks.ack_due is not None and bool(acks.rel_pending)  # (then the timer is armed for them already)
        first = stop = -1  # (a run of consecutive reliable numbers)
        for d in taken:
            if d.delivery is _UNRELIABLE:
                continue
            n = d.number
            if n != stop:
                if stop > first:
                    acks.taken(first, stop)
                first = n
            stop = n + 1
        if stop <= first:
            return  # (no reliable message)
        acks.taken(first, stop)
        if acks.ack_due is None:
            acks.owe_acks(self._ctx.now + self._config.ack_delay)
        if not owed:
            self.schedule(r)

    def refuse(self, r: ReceiverRecord, refused: Sequence[Delivered]) -> None:
        """`ack_on_take`: the application refused these messages right after taking them (none of their acks was
        written since): they are not owed; a close nacks them, unless `accept_refused` comes first."""
        if not r.ack_on_take or r.state is _GONE or r.acks is None:
            return  # (after a close every number was settled already)
        acks = r.acks
        for first, stop in reliable_runs(refused):
            acks.refuse(first, stop)
        self.schedule(r)

    def accept_refused(self, r: ReceiverRecord) -> None:
        """The application read on past the messages it refused: their acks are owed after all (the wire cannot
        nack one reliable message and keep the channel)."""
        acks = r.acks
        if r.state is _GONE or acks is None or not acks.accept_refused():
            return
        if acks.ack_due is None:
            acks.owe_acks(self._ctx.now + self._config.ack_delay)
        self.schedule(r)

    def expose(self, att: Attachment) -> None:
        """The application now holds this half: report what it missed."""
        if att.is_sender:
            self._tx.expose(att.handle)
            return
        r = self._receivers.get(att.handle)
        if r is not None and not r.exposed:
            r.exposed = True
            if r.queue:
                self._out.event(MessageAvailable(r.handle))
            self._report_end(r)

    def drop(self, handle: int) -> None:
        """The application let go of a receiver handle: close it."""
        r = self._receivers.get(handle)
        if r is None or r.app_dropped:
            return
        r.app_dropped = True
        if not self._ctx.closed and r.state is not _GONE:
            self.close(r, EndReason.CLOSED)
        else:
            self.discard_queues([r], lost=False)
        self._maybe_forget(r)

    def teardown(self) -> None:
        """The connection is over: every receiver ends with CONNECTION_LOST but those that had finished, whose
        queues stay takeable; those nobody holds are forgotten."""
        self._gapped.clear()
        self.ranges_total = 0
        for r in list(self._receivers.values()):
            if r.end_reason is not EndReason.FINISHED:  # a finished channel's messages stay takeable (the spec's
                r.queue = None                          # "all messages acked prior to it closing", then the end)
            if not r.end_reported:
                if r.state is not _GONE:
                    r.move(_GONE)
                r.end_reason = EndReason.CONNECTION_LOST
                r.end_reported = True
                if r.exposed and not r.app_dropped:
                    self._out.event(ReceiverEnded(r.handle, EndReason.CONNECTION_LOST))
            if r.app_dropped or not r.exposed:
                self._halves.forget_receiver(r)

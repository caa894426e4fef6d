"""The sender procedures (spec: sending a Message, "finish", "cancel", acks and nacks on the sender side,
and the sender's part of "reachable" and cascading loss).

send: mint the IDs and halves of its attachments (minting.py), then write the Message frame: on the channel's one
ordered uni stream, on a fresh uni stream (FIN after it), or as a datagram (own number space; SentUnreliable within
min(sent_unreliable_delay, RTT/2), or as soon as the control stream is attached). finish waits for the control
stream, then SentUnreliable (if owed) + FinishSender + FIN. cancel resets message streams at once and the control
stream (code 1) once attached. Acks on an unreachable sender are reported when it becomes reachable; CloseReceiver
settles everything still open as nacked and ends the sender. `send` is the one way to send: a batch of messages
(a batch of one may carry attachments); a batch without attachments skips minting and linking, is checked once, builds
its header bytes from the sender's cached Message head and, ordered, is one write.

Senders is the only writer of a SenderRecord's fields (the ledger's through the record's own methods, the state through
`SenderRecord.move`). What a cascade does to a sender (`lose`, `became_reachable`) is here too; which halves a cascade
visits is creation.py's walk, started by `_report`, and what a visit does to a half is loss.py's, reached through the
two callbacks `set_loss` gives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NoReturn

from ..errors import ERROR_FOR_REASON, ChannelClosed, ConnectionLost, EndReason, LimitExceeded, ResetCode
from ..wire.channel_id import ChannelId
from ..wire.errors import ProtocolError
from ..wire.frames import (
    AckNackUnreliable,
    AckReliable,
    ChannelControl,
    CloseReceiver,
    FinishSender,
    Frame,
    SentUnreliable,
    encode_frame,
    encode_message,
    message_head,
    plain_message_prefix,
)
from .app import AttachKind, Delivery, MessagesAcked, MessagesNacked, SenderEnded
from .context import Context
from .creation import CreationLinks, Node
from .halves import Halves
from .minting import Minting
from .sender import SenderRecord, SState
from .streams import VERSION_BYTES, Role, StreamTable
from .timers import SENT_UNRELIABLE
from .transport import ResetStream, SendDatagram, SendStreamData

_ORDERED = Delivery.ORDERED
_UNORDERED = Delivery.UNORDERED  # (an enum member looked up on its class costs ~100-200 ns)
_UNRELIABLE = Delivery.UNRELIABLE
_SENT_NONE = encode_frame(SentUnreliable(0))
"""A sender's first frame on a control stream the peer opened, when it has nothing else to write."""
_OPEN = SState.OPEN
_GONE = SState.GONE
_CLOSED = EndReason.CLOSED
_END_ON_CLOSE = {SState.FINISHED: EndReason.FINISHED, SState.CANCELLED: _CLOSED, SState.CANCEL_WAIT: _CLOSED}
"""Why a sender ends when CloseReceiver comes, by its state (otherwise: RECEIVER_DROPPED)."""


class Senders:
    """Sender-side procedures for every sender of one connection."""

    def __init__(self, ctx: Context, streams: StreamTable, halves: Halves, links: CreationLinks) -> None:
        self._ctx = ctx
        self._out = ctx.out
        self._timers = ctx.timers
        self._config = ctx.config
        self._max = ctx.config.max_frame_size
        self._datagram_max = ctx.config.max_datagram_payload
        self._streams = streams
        self._halves = halves
        self._senders = halves.senders
        self._links = links
        self._minting = Minting(ctx, halves, links)
        self._on_reachable: Callable[[int], None]  # (set by set_loss, which Loss calls at once)
        self._on_lost: Callable[[int, Node], None]

    def set_loss(self, on_reachable: Callable[[int], None], on_lost: Callable[[int, Node], None]) -> None:
        """What a reachability walk and a cascade do at each half they visit (loss.py)."""
        self._on_reachable = on_reachable
        self._on_lost = on_lost

    # ---- the application's calls ----
    def app_sender(self, handle: int) -> SenderRecord:
        """The sender behind an application handle (ConnectionLost / ChannelClosed if unusable)."""
        if self._ctx.closed:
            raise ConnectionLost()
        s = self._senders.get(handle)
        if s is None or s.app_dropped:
            raise ChannelClosed(f"unknown or dropped sender {handle}")
        return s

    def error(self, s: SenderRecord) -> Exception:
        """The error a send on an ended sender raises."""
        if s.end_reason is not None and s.end_reported:
            return ERROR_FOR_REASON.get(s.end_reason, ChannelClosed)(f"sender ended: {s.end_reason.value}")
        return ChannelClosed("the sender was finished or cancelled")

    def status(self, handle: int) -> EndReason | None:
        """None while the sender is alive, else why it ended (as reported by SenderEnded)."""
        s = self._senders.get(handle)
        if s is None:
            raise ChannelClosed(f"unknown or dropped sender {handle}")
        return s.end_reason if s.end_reported else None

    def drop(self, handle: int) -> None:
        """The application let go of a sender handle: cancel it unless already finished."""
        s = self._senders.get(handle)
        if s is None or s.app_dropped:
            return
        s.app_dropped = True
        if not self._ctx.closed and s.state is _OPEN:
            self.cancel(s)
        self.maybe_forget(s)

    def abandon_handle(self, handle: int, *, lost: bool) -> None:
        """`abandon` the sender behind a handle, if the engine still has it."""
        s = self._senders.get(handle)
        if s is not None:
            self.abandon(s, lost=lost)

    def expose(self, handle: int) -> None:
        """The application now holds this sender (a message carrying it was taken): report what it missed."""
        s = self._senders.get(handle)
        if s is not None and not s.exposed:
            s.exposed = True
            if s.end_reported and s.end_reason is not None:
                self._out.event(SenderEnded(s.handle, s.end_reason))

    def abandon(self, s: SenderRecord, *, lost: bool) -> None:
        """A sender handed to us in a message that will never be taken: lost with it, or cancelled."""
        s.app_dropped = True
        if lost and s.state is not _GONE:
            self.on_ctrl_reset(s, ResetCode.LOST)
        elif s.state is _OPEN:
            self.cancel(s)
        self.maybe_forget(s)

    # ---- writing messages ----
    def send(self, s: SenderRecord, payloads: Sequence[bytes], delivery: Delivery) -> int | None:
        """Send messages without attachments, in order: the one send path (`send_attached` is a message with
        attachments: minting first, then the same writes). Raises, before anything is sent, if the sender cannot
        send or a payload is over its limit. Returns the stream written (an unordered batch: its last message's;
        None: datagrams)."""
        k = len(payloads)
        if s.state is not _OPEN or (len(payloads[0]) if k == 1 else max(map(len, payloads), default=0)) > self._max:
            self._check(s, max(map(len, payloads), default=0))  # (raises why)
        if k != 1:
            if s.oneshot and k:
                raise ChannelClosed("a oneshot sender sends one message")
            if not k:
                return None if delivery is _UNRELIABLE else s.ordered_sid
        head = s.head or self._head(s)
        sid = s.ordered_sid
        if delivery is _ORDERED:  # (the steady state: a plain write to the channel's open stream)
            number = s.next_rel
            if k == 1:
                p = payloads[0]
                data = plain_message_prefix(head, number, len(p)) + p
            else:
                data = b"".join([b for n, p in enumerate(payloads, number)
                                 for b in (plain_message_prefix(head, n, len(p)), p)])
            if sid is not None:
                self._out.command(SendStreamData(sid, data, False))
            else:
                sid = s.ordered_sid = self._streams.open_uni(data)
            s.next_rel = number + k
        elif delivery is _UNORDERED:
            for p in payloads:
                sid = self._write_unordered(s, s.next_rel, plain_message_prefix(head, s.next_rel, len(p)) + p)
        else:
            number = s.next_unrel
            version = VERSION_BYTES if self._streams.need_version else b""
            limit = self._datagram_max
            if k == 1:  # (the list and loops below cost more than one message)
                p = payloads[0]
                data = version + plain_message_prefix(head, number, len(p)) + p
                if len(data) > limit:
                    self._datagram_too_large(data, limit)
                self._out.command(SendDatagram(data))
                self._sent_datagram(s)
            else:
                datagrams = [version + plain_message_prefix(head, n, len(p)) + p
                             for n, p in enumerate(payloads, number)]
                for data in datagrams:
                    if len(data) > limit:
                        self._datagram_too_large(data, limit)
                for data in datagrams:
                    self._out.command(SendDatagram(data))
                    self._sent_datagram(s)
            sid = None
        if s.oneshot:
            self.finish(s)
        return sid

    @staticmethod
    def _datagram_too_large(data: bytes, limit: int) -> NoReturn:
        raise LimitExceeded(f"unreliable message encodes to {len(data)} bytes, over max_datagram_payload {limit}")

    def _check(self, s: SenderRecord, size: int) -> None:
        """Whether a sender may send messages of up to `size` bytes (raises why not)."""
        if s.state is not _OPEN:
            raise self.error(s)
        if size > self._max:
            raise LimitExceeded(f"payload of {size} bytes exceeds max_frame_size {self._max}")

    def send_attached(
        self, s: SenderRecord, payload: bytes, attach: Sequence[AttachKind], delivery: Delivery
    ) -> tuple[int, tuple[int, ...], int | None]:
        """A message carrying attachments: mint their channels and halves, link them from it, then write it;
        returns its number, the local halves created and the stream written."""
        self._check(s, len(payload))
        config = self._config
        minter, ids = self._minting.mint(attach)
        reliable = delivery is not _UNRELIABLE
        number = s.next_rel if reliable else s.next_unrel
        data = encode_message(s.channel, number, ids, payload)
        if not reliable:
            if self._streams.need_version:
                data = VERSION_BYTES + data
            if len(data) > config.max_datagram_payload:
                self._datagram_too_large(data, config.max_datagram_payload)
        created = self._minting.commit(minter, s.handle, s.channel, (reliable, number), ids, attach)
        sid: int | None
        if delivery is _ORDERED:
            if s.ordered_sid is None:
                sid = s.ordered_sid = self._streams.open_uni(data)
            else:
                sid = s.ordered_sid
                self._out.command(SendStreamData(sid, data))
            s.next_rel += 1
        elif delivery is _UNORDERED:
            sid = self._write_unordered(s, number, data)
        else:
            sid = None
            self._out.command(SendDatagram(data))
            self._sent_datagram(s)
        if s.oneshot:
            self.finish(s)
        return number, tuple(created), sid

    def _write_unordered(self, s: SenderRecord, number: int, data: bytes) -> int:
        """Message `number`, encoded, on a stream of its own; returns the stream."""
        sid = self._streams.open_uni(data, fin=True)
        if s.unordered_sids is None:
            s.unordered_sids = {}
        s.unordered_sids[number] = sid
        s.next_rel += 1
        return sid

    def _sent_datagram(self, s: SenderRecord) -> None:
        s.next_unrel += 1
        s.undeclared += 1
        if s.ctrl is not None:  # (set_earlier touches the heap only when this deadline is earlier)
            half_rtt, cap = self._ctx.rtt / 2, self._config.sent_unreliable_delay
            self._timers.set_earlier((SENT_UNRELIABLE, s.handle), self._ctx.now + (half_rtt if half_rtt < cap else cap))

    def _head(self, s: SenderRecord) -> bytes:
        """The bytes a sender's Message frames start with (made by its first plain write, kept on the record)."""
        s.head = message_head(s.channel)
        return s.head

    def create_remote(self, channel: ChannelId) -> SenderRecord:
        """A sender the peer attached to a message: reachable; we open its control stream."""
        s = self._halves.add_sender(channel, reachable=True, exposed=False)
        s.ctrl = self._streams.open_bidi(encode_frame(ChannelControl(channel)), Role.TO_SENDER, s.handle)
        s.ctrl_open = True
        return s

    # ---- finish and cancel ----
    def finish(self, s: SenderRecord) -> None:
        """Gracefully finish (FinishSender once the control stream exists)."""
        if s.state in (SState.FINISH_WAIT, SState.FINISHED) or s.end_reason is EndReason.FINISHED:
            return
        if s.state is not _OPEN:
            raise self.error(s)
        s.move(SState.FINISH_WAIT)
        if s.ordered_sid is not None:
            self._out.command(SendStreamData(s.ordered_sid, b"", True))
        if s.ctrl is not None:
            self._do_finish(s)

    def _do_finish(self, s: SenderRecord) -> None:
        frames: list[Frame] = []
        if s.undeclared:
            frames.append(SentUnreliable(s.undeclared))
            s.undeclared = 0
        frames.append(FinishSender(s.next_rel))
        self._timers.cancel((SENT_UNRELIABLE, s.handle))
        s.move(SState.FINISHED)
        s.ctrl_open = False
        assert s.ctrl is not None
        self._streams.write(s.ctrl, b"".join(encode_frame(f) for f in frames), fin=True)

    def cancel(self, s: SenderRecord) -> None:
        """Abruptly cancel: message streams reset at once, the control stream once it exists (no-op once ended)."""
        if s.state not in (_OPEN, SState.FINISH_WAIT):
            return
        s.move(SState.CANCEL_WAIT)
        self.reset_message_streams(s, ResetCode.CANCELLED)
        self._timers.cancel((SENT_UNRELIABLE, s.handle))
        if s.ctrl is not None:
            self._do_cancel(s)

    def _do_cancel(self, s: SenderRecord) -> None:
        s.move(SState.CANCELLED)
        self._reset_ctrl(s, ResetCode.CANCELLED)

    def _reset_ctrl(self, s: SenderRecord, code: ResetCode) -> None:
        """Reset our direction of the control stream, if it is still open."""
        if s.ctrl is not None and s.ctrl_open:
            s.ctrl_open = False
            self._streams.reset(s.ctrl, code)

    def reset_message_streams(self, s: SenderRecord, code: ResetCode) -> None:
        """Reset every stream carrying only this sender's messages (ordered, and unordered not yet acked)."""
        if s.ordered_sid is not None:
            self._out.command(ResetStream(s.ordered_sid, code))
            s.ordered_sid = None
        if s.unordered_sids:
            for sid in s.unordered_sids.values():
                self._out.command(ResetStream(sid, code))
            s.unordered_sids = None

    # ---- the control stream ----
    def attached(self, s: SenderRecord, sid: int) -> None:
        """The peer opened our control stream; a first frame tells it we read its ChannelControl: whatever we
        write first, or SentUnreliable(0) if the input ends with nothing written (`StreamTable.owe_first`).
        The entrypoint's needs none: its receiver is never lost, so the server never resets its control stream
        before the client ended its own direction, and nothing waits for that frame."""
        s.ctrl = sid
        s.ctrl_open = True
        if s.state is _OPEN and not s.undeclared and s.channel:
            self._streams.owe_first(sid, _SENT_NONE)
        if s.state is SState.FINISH_WAIT:
            self._do_finish(s)
        elif s.state is SState.CANCEL_WAIT:
            self._do_cancel(s)
        elif s.undeclared:
            self.sent_unreliable_due(s.handle)

    def sent_unreliable_due(self, handle: int) -> None:
        """The SentUnreliable timer of a sender ran out: declare what it sent since the last one."""
        s = self._senders.get(handle)
        if s is None or s.state is not _OPEN or not s.ctrl_open or not s.undeclared or s.ctrl is None:
            return
        self._streams.write(s.ctrl, encode_frame(SentUnreliable(s.undeclared)))
        s.undeclared = 0

    def on_frame(self, s: SenderRecord, frame: Frame) -> None:
        """A frame from the receiver on the control stream: acks, nacks, CloseReceiver."""
        if s.state is _GONE:
            return
        if isinstance(frame, AckReliable):
            ledger = s.ledger()
            for a, b in ledger.ack_reliable(frame.ranges, s.next_rel, s.channel):
                self._report(s, True, True, a, b)
            ledger.check_caps(self._config.max_ack_ranges, s.channel)
        elif isinstance(frame, AckNackUnreliable):
            if not frame.ranges:  # (the receiver's first frame: nothing to apply)
                return
            for a, b, positive in s.ledger().acknack_unreliable(frame.ranges, s.next_unrel, s.channel):
                self._report(s, positive, False, a, b)
        elif isinstance(frame, CloseReceiver):
            ledger = s.ledger()
            acks, nacks = ledger.close_receiver(frame.ranges, s.next_rel, s.channel)
            for a, b in acks:
                self._report(s, True, True, a, b)
            for a, b in nacks:
                self._report(s, False, True, a, b)
            rest = ledger.settle_unreliable(s.next_unrel)
            if rest is not None:
                self._report(s, False, *rest)
            reason = _END_ON_CLOSE.get(s.state, EndReason.RECEIVER_DROPPED)
            if s.state is not SState.FINISHED:
                self.reset_message_streams(s, ResetCode.CANCELLED)
            self._reset_ctrl(s, ResetCode.CANCELLED)
            self.gone(s, reason)
        else:
            raise ProtocolError(f"{type(frame).__name__} sent to a sender")

    def on_ctrl_reset(self, s: SenderRecord, code: int) -> None:
        """The receiver reset its direction: 'lost' (or 'cancelled') ends the sender, open messages nacked."""
        if s.state is _GONE:
            return
        for reliable, first, stop in s.settle_all():
            self._report(s, False, reliable, first, stop)
        self.reset_message_streams(s, ResetCode.LOST)
        self._reset_ctrl(s, ResetCode.LOST)
        self.gone(s, EndReason.LOST if code == ResetCode.LOST else EndReason.RECEIVER_DROPPED)

    # ---- reporting, reachability, loss ----
    def _report(self, s: SenderRecord, acked: bool, reliable: bool, first: int, stop: int) -> None:
        """Report a run once: acks of an unreachable sender wait; nacks cascade at once."""
        if reliable and s.unordered_sids:
            for n in [n for n in s.unordered_sids if first <= n < stop]:
                del s.unordered_sids[n]
        keys = self._links.keys_in(s.handle, reliable, first, stop)
        if acked:
            if s.reachable:
                if s.exposed:
                    self._out.event(MessagesAcked(s.handle, reliable, first, stop))
            else:
                s.deferred.append((reliable, first, stop))
            if keys:
                self._links.acked(s.handle, keys, self._on_reachable)
        else:
            if s.exposed:
                self._out.event(MessagesNacked(s.handle, reliable, first, stop))
            if keys:
                self._links.nacked(s.handle, keys, self._on_lost)

    def became_reachable(self, s: SenderRecord) -> None:
        """The message that created `s` was acked in reach: report the acks it held back."""
        if not s.reachable:
            s.reachable = True
            self._report_deferred(s, MessagesAcked)

    def drop_deferred_as_nacks(self, s: SenderRecord) -> None:
        """An upstream loss: acks held back while unreachable are nacks after all."""
        if s.deferred:
            self._report_deferred(s, MessagesNacked)

    def _report_deferred(self, s: SenderRecord, event: type[MessagesAcked | MessagesNacked]) -> None:
        if s.deferred:
            deferred, s.deferred = s.deferred, []
            if s.exposed:
                for reliable, first, stop in deferred:
                    self._out.event(event(s.handle, reliable, first, stop))
        self.maybe_forget(s)

    def lose(self, s: SenderRecord) -> None:
        """Cascading loss on a live sender: its node is already gone, so its messages' links are walked by
        the cascade itself; only report, reset and end here (the hot path of a 10,000-deep cascade)."""
        runs = s.settle_all()
        if s.exposed:
            h = s.handle
            for reliable, first, stop in runs:
                self._out.event(MessagesNacked(h, reliable, first, stop))
        self.reset_message_streams(s, ResetCode.LOST)
        self._reset_ctrl(s, ResetCode.LOST)
        self.gone(s, EndReason.LOST)

    # ---- the end ----
    def gone(self, s: SenderRecord, reason: EndReason) -> None:
        """The sender ceased to exist: SenderEnded now; acks it still holds back are reported later."""
        s.move(_GONE)
        self._halves.sender_ended(s)
        self._timers.cancel((SENT_UNRELIABLE, s.handle))
        if s.ctrl is not None:
            self._streams.unbind(s.ctrl)
        s.end_reason = reason
        if not s.end_reported:
            s.end_reported = True
            if s.exposed and not s.app_dropped:
                self._out.event(SenderEnded(s.handle, reason))
        self.maybe_forget(s)

    def maybe_forget(self, s: SenderRecord) -> None:
        """Forget an ended sender nobody holds and that owes no report."""
        if s.state is _GONE and s.app_dropped and not s.deferred:
            self._halves.forget_sender(s)

    def teardown(self) -> None:
        """The connection is over: every sender ends with CONNECTION_LOST; those nobody holds are forgotten."""
        for s in list(self._senders.values()):
            s.deferred.clear()
            if not s.end_reported:
                s.move(_GONE)
                s.end_reason = EndReason.CONNECTION_LOST
                s.end_reported = True
                if s.exposed and not s.app_dropped:
                    self._out.event(SenderEnded(s.handle, EndReason.CONNECTION_LOST))
            if s.app_dropped or not s.exposed:
                self._halves.forget_sender(s)

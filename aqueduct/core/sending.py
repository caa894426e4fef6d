"""The sender procedures (spec: sending, finish, cancel, acks on the sender side).

send: mint one channel ID per attachment and create the local halves (not
reachable, linked from this message), then write the Message frame: on the
channel's one ordered uni stream, on a fresh uni stream (FIN after it), or as
a datagram (own number space; SentUnreliable within min(sent_unreliable_delay,
RTT/2), or as soon as the control stream is attached). finish waits for the
control stream, then SentUnreliable (if owed) + FinishSender + FIN. cancel
resets message streams at once and the control stream (code 1) once
attached. Acks on an unreachable sender are reported when it becomes
reachable; CloseReceiver settles everything still open as nacked and ends
the sender. A message without attachments (send_plain) skips minting and
linking; its header bytes are built from the sender's cached channel varint,
and small ones on the ordered stream join the write before them.
"""

# mypy: disable-error-code="misc"
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import EndReason, LimitExceeded, ResetCode
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
from .app import AttachKind, Delivery, MessagesAcked, MessagesNacked, SenderEnded, SendResult
from .links import MsgKey
from .sender import Sender, SState
from .streams import VERSION_BYTES, Role
from .transport import ResetStream, SendDatagram, SendStreamData

if TYPE_CHECKING:
    from .engine import Engine

_ORDERED = Delivery.ORDERED
_OPEN = SState.OPEN


def _plain_head(s: Sender, number: int, n: int) -> bytes:
    """The bytes before the payload of an n-byte Message without attachments (the frame's head cached)."""
    head = s.head
    if head is None:
        head = s.head = message_head(s.channel)
    return plain_message_prefix(head, number, n)


class SendingMixin:
    """Sender-side procedures."""

    # ---- application calls ----
    def _send_plain(self: Engine, s: Sender, payload: bytes, delivery: Delivery) -> int | None:
        """The hot path: `send_plain` for an open sender and a payload within the frame limit."""
        if delivery is _ORDERED:
            sid = s.ordered_sid
            if sid is None:
                return self._send(s, payload, (), delivery).stream_id
            self._write_ordered(s, sid, payload)
            return sid
        unordered = delivery is Delivery.UNORDERED
        number = s.next_rel if unordered else s.next_unrel
        data = _plain_head(s, number, len(payload)) + payload
        if unordered:
            sid = self._write_unordered(s, number, data)
        else:
            if self._streams.need_version:
                data = VERSION_BYTES + data
            if len(data) > self.config.max_datagram_payload:
                return self._send(s, payload, (), delivery).stream_id  # raises LimitExceeded
            sid = None
            self._write_datagram(s, data)
        if s.oneshot:
            self._finish(s)
        return sid

    def _write_unordered(self: Engine, s: Sender, number: int, data: bytes) -> int:
        """Message `number`, encoded, on a stream of its own; returns the stream."""
        sid = self._streams.open_uni(data, fin=True)
        if s.unordered_sids is None:
            s.unordered_sids = {}
        s.unordered_sids[number] = sid
        s.next_rel += 1
        return sid

    def _write_datagram(self: Engine, s: Sender, data: bytes) -> None:
        """The next unreliable message, encoded (Version included if due), as a datagram."""
        self._out.command(SendDatagram(data))
        s.next_unrel += 1
        s.undeclared += 1
        if s.ctrl is not None:  # (set_earlier touches the heap only when this deadline is earlier)
            half_rtt, cap = self._ctx.rtt / 2, self.config.sent_unreliable_delay
            self._timers.set_earlier(("su", s.handle), self._ctx.now + (half_rtt if half_rtt < cap else cap))

    def _write_ordered(self: Engine, s: Sender, sid: int, payload: bytes) -> int:
        """One more plain message on an open ordered stream; returns its number.

        A write right after another one of these to the same stream joins it (Outbox.write_joined)."""
        number = s.next_rel
        head = s.head  # (_plain_head, inline)
        if head is None:
            head = s.head = message_head(s.channel)
        self._out.write_joined(sid, plain_message_prefix(head, number, len(payload)), payload)
        s.next_rel = number + 1
        return number

    def _send(self: Engine, s: Sender, payload: bytes, attach: Sequence[AttachKind], delivery: Delivery) -> SendResult:
        sid = s.ordered_sid
        if delivery is _ORDERED and sid is not None and not attach and s.state is _OPEN and len(payload) <= self._max:
            return SendResult(self._write_ordered(s, sid, payload), (), sid)
        if not s.can_send:
            raise self._sender_error(s)
        if len(payload) > self.config.max_frame_size:
            raise LimitExceeded(f"payload of {len(payload)} bytes exceeds max_frame_size {self.config.max_frame_size}")
        if attach and self._halves.count() + len(attach) > self.config.max_channels:
            raise LimitExceeded(f"more than max_channels={self.config.max_channels} channels")
        minter = self._minter.copy() if attach else self._minter
        peer = self._side.other
        ids = [minter.mint(to=peer if not k.gives_sender else self._side, oneshot=k.oneshot) for k in attach]
        reliable = delivery is not Delivery.UNRELIABLE
        number = s.next_rel if reliable else s.next_unrel
        data = encode_message(s.channel, number, ids, payload)
        if not reliable:
            if self._streams.need_version:
                data = VERSION_BYTES + data
            if len(data) > self.config.max_datagram_payload:
                raise LimitExceeded(
                    f"unreliable message encodes to {len(data)} bytes, over max_datagram_payload "
                    f"{self.config.max_datagram_payload}"
                )
        self._minter = minter
        created = [self._create_local_half(ChannelId(cid), kind) for cid, kind in zip(ids, attach, strict=True)]
        if created:
            self._links.add_link(s.handle, s.channel, (reliable, number), created)
        if delivery is Delivery.ORDERED:
            if s.ordered_sid is None:
                sid = s.ordered_sid = self._streams.open_uni(data)
            else:
                sid = s.ordered_sid
                self._out.command(SendStreamData(sid, data))
            s.next_rel += 1
        elif delivery is Delivery.UNORDERED:
            sid = self._write_unordered(s, number, data)
        else:
            sid = None
            self._write_datagram(s, data)
        if s.channel.oneshot:
            self._finish(s)
        return SendResult(number, tuple(created), sid)

    def _create_local_half(self: Engine, channel: ChannelId, kind: AttachKind) -> int:
        """A half we keep for a channel we just minted: unreachable, no control stream until the peer opens it."""
        if kind.gives_sender:
            h = self._halves.add_receiver(channel, exposed=True, claimed=True).handle
        else:
            h = self._halves.add_sender(channel, reachable=False, exposed=True).handle
        self._links.add_unreachable(h, channel, not kind.gives_sender)
        return h

    def _create_remote_sender(self: Engine, channel: ChannelId) -> Sender:
        """A sender the peer attached to a message: reachable; we open its control stream."""
        s = self._halves.add_sender(channel, reachable=True, exposed=False)
        s.ctrl = self._streams.open_bidi(encode_frame(ChannelControl(channel)), Role.TO_SENDER, s.handle)
        s.ctrl_open = True
        return s

    def _finish(self: Engine, s: Sender) -> None:
        if s.state in (SState.FINISH_WAIT, SState.FINISHED) or s.end_reason is EndReason.FINISHED:
            return
        if s.state is not SState.OPEN:
            raise self._sender_error(s)
        s.state = SState.FINISH_WAIT
        if s.ordered_sid is not None:
            self._out.command(SendStreamData(s.ordered_sid, b"", True))
        if s.ctrl is not None:
            self._do_finish(s)

    def _do_finish(self: Engine, s: Sender) -> None:
        frames: list[Frame] = []
        if s.undeclared:
            frames.append(SentUnreliable(s.undeclared))
            s.undeclared = 0
        frames.append(FinishSender(s.next_rel))
        self._timers.cancel(("su", s.handle))
        s.state = SState.FINISHED
        s.ctrl_open = False
        assert s.ctrl is not None
        self._streams.write(s.ctrl, b"".join(encode_frame(f) for f in frames), fin=True)

    def _cancel(self: Engine, s: Sender) -> None:
        if s.state not in (SState.OPEN, SState.FINISH_WAIT):
            return
        s.state = SState.CANCEL_WAIT
        self._reset_message_streams(s, ResetCode.CANCELLED)
        self._timers.cancel(("su", s.handle))
        if s.ctrl is not None:
            self._do_cancel(s)

    def _do_cancel(self: Engine, s: Sender) -> None:
        s.state = SState.CANCELLED
        if s.ctrl is not None and s.ctrl_open:
            s.ctrl_open = False
            self._streams.reset(s.ctrl, ResetCode.CANCELLED)

    def _reset_message_streams(self: Engine, s: Sender, code: int) -> None:
        if s.ordered_sid is not None:
            self._out.command(ResetStream(s.ordered_sid, code))
            s.ordered_sid = None
        if s.unordered_sids:
            for sid in s.unordered_sids.values():
                self._out.command(ResetStream(sid, code))
            s.unordered_sids = None

    # ---- control stream ----
    def _sender_attached(self: Engine, s: Sender, sid: int) -> None:
        """The peer opened our control stream; a first frame tells it we read its ChannelControl."""
        s.ctrl = sid
        s.ctrl_open = True
        if s.state is SState.OPEN and not s.undeclared:
            self._streams.write(sid, encode_frame(SentUnreliable(0)))
        if s.state is SState.FINISH_WAIT:
            self._do_finish(s)
        elif s.state is SState.CANCEL_WAIT:
            self._do_cancel(s)
        elif s.undeclared:
            self._sent_unreliable_due(s.handle)

    def _sent_unreliable_due(self: Engine, handle: int) -> None:
        s = self._senders.get(handle)
        if s is None or s.state is not SState.OPEN or not s.ctrl_open or not s.undeclared or s.ctrl is None:
            return
        self._streams.write(s.ctrl, encode_frame(SentUnreliable(s.undeclared)))
        s.undeclared = 0

    def _sender_frame(self: Engine, s: Sender, frame: Frame) -> None:
        if s.state is SState.GONE:
            return
        if isinstance(frame, AckReliable):
            for a, b in s.ack_reliable(frame.ranges):
                self._report(s, True, True, a, b)
        elif isinstance(frame, AckNackUnreliable):
            for a, b, positive in s.acknack_unreliable(frame.ranges):
                self._report(s, positive, False, a, b)
        elif isinstance(frame, CloseReceiver):
            acks, nacks = s.close_receiver(frame.ranges)
            for a, b in acks:
                self._report(s, True, True, a, b)
            for a, b in nacks:
                self._report(s, False, True, a, b)
            if s.next_unrel > s.unrel_resolved:
                first, s.unrel_resolved = s.unrel_resolved, s.next_unrel
                self._report(s, False, False, first, s.next_unrel)
            reason = {
                SState.FINISHED: EndReason.FINISHED,
                SState.CANCELLED: EndReason.CLOSED,
                SState.CANCEL_WAIT: EndReason.CLOSED,
            }.get(s.state, EndReason.RECEIVER_DROPPED)
            if s.state is not SState.FINISHED:
                self._reset_message_streams(s, ResetCode.CANCELLED)
            if s.ctrl is not None and s.ctrl_open:
                s.ctrl_open = False
                self._streams.reset(s.ctrl, ResetCode.CANCELLED)
            self._sender_gone(s, reason)
        else:
            raise ProtocolError(f"{type(frame).__name__} sent to a sender")

    def _sender_ctrl_reset(self: Engine, s: Sender, code: int) -> None:
        """The receiver reset its direction: 'lost' (or 'cancelled') ends the sender, open messages nacked."""
        if s.state is SState.GONE:
            return
        self._nack_everything(s)
        self._reset_message_streams(s, ResetCode.LOST)
        if s.ctrl is not None and s.ctrl_open:
            s.ctrl_open = False
            self._streams.reset(s.ctrl, ResetCode.LOST)
        self._sender_gone(s, EndReason.LOST if code == ResetCode.LOST else EndReason.RECEIVER_DROPPED)

    def _nack_everything(self: Engine, s: Sender) -> None:
        """Every message not yet acked (or acked but unreported) is nacked."""
        if s.rel_acked:
            for a, b in s.unresolved_reliable():
                self._report(s, False, True, a, b)
        elif s.next_rel > s.rel_prefix:
            self._report(s, False, True, s.rel_prefix, s.next_rel)
        s.rel_prefix = s.next_rel
        s.rel_acked.clear()
        if s.next_unrel > s.unrel_resolved:
            first, s.unrel_resolved = s.unrel_resolved, s.next_unrel
            self._report(s, False, False, first, s.next_unrel)

    # ---- reporting ----
    def _report(self: Engine, s: Sender, acked: bool, reliable: bool, first: int, stop: int) -> None:
        """Report a run once: acks of an unreachable sender wait; nacks cascade at once."""
        if reliable and s.unordered_sids:
            for n in [n for n in s.unordered_sids if first <= n < stop]:
                del s.unordered_sids[n]
        node = self._links.nodes.get(s.handle)
        keys: list[MsgKey] | None = None
        if node is not None and node.children:
            if stop - first <= len(node.children):
                keys = [(reliable, n) for n in range(first, stop) if (reliable, n) in node.children]
            else:
                keys = [k for k in node.children if k[0] == reliable and first <= k[1] < stop]
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

    def _sender_gone(self: Engine, s: Sender, reason: EndReason) -> None:
        """The sender ceased to exist: SenderEnded now; acks it still holds back are reported later."""
        s.state = SState.GONE
        self._halves.sender_ended(s)
        self._timers.cancel(("su", s.handle))
        if s.ctrl is not None:
            self._streams.unbind(s.ctrl)
        s.end_reason = reason
        if not s.end_reported:
            s.end_reported = True
            if s.exposed and not s.app_dropped:
                self._out.event(SenderEnded(s.handle, reason))
        self._maybe_forget_sender(s)

    def _maybe_forget_sender(self: Engine, s: Sender) -> None:
        if s.state is SState.GONE and s.app_dropped and not s.deferred:
            self._halves.forget_sender(s)

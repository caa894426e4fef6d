"""What reachability and cascading loss do to halves (the walks are in links.py).

on_reachable: a sender that became reachable reports the acks it held back
(and, if it already ceased, its end). on_lost, per visited node:
  live sender   -> reset control stream and message streams with 'lost',
                   every message not yet reported is nacked, SenderEnded(LOST)
  live receiver -> reset control stream with 'lost', queue discarded,
                   ReceiverEnded(LOST)
  ceased half   -> ClosedChannelLost(channel) on a fresh uni stream + FIN
                   (a ceased sender still reports its held-back acks as nacks)
Receiving ClosedChannelLost(c): c must be minted by the peer; an unclaimed
receiver we still keep for c (its creating message will never come) is
dropped with its queue.
"""

# mypy: disable-error-code="misc"
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import EndReason, ResetCode
from ..wire.channel_id import ChannelId
from ..wire.errors import ProtocolError
from ..wire.frames import ClosedChannelLost, encode_frame
from .app import MessagesAcked, MessagesNacked
from .links import Node
from .receiver import RState
from .sender import Sender, SState

if TYPE_CHECKING:
    from .engine import Engine


class LossMixin:
    """Glue between the link walks and the halves."""

    def _on_reachable(self: Engine, node_id: int) -> None:
        s = self._senders.get(node_id)
        if s is None or s.reachable:
            return
        s.reachable = True
        if s.deferred:
            deferred, s.deferred = s.deferred, []
            if s.exposed:
                for reliable, first, stop in deferred:
                    self._out.event(MessagesAcked(s.handle, reliable, first, stop))
        self._maybe_forget_sender(s)

    def _on_lost(self: Engine, node_id: int, node: Node) -> None:
        if node.is_sender:
            s = self._senders.get(node_id)
            if s is not None and s.state is not SState.GONE:
                if s.ctrl is not None and not s.ctrl_open:
                    # finished or cancelled: our direction is closed, so the peer learns it this way
                    self._send_closed_channel_lost(node.channel)
                self._drop_deferred_as_nacks(s)
                self._lose_live_sender(s)
                return
            self._send_closed_channel_lost(node.channel)
            if s is not None:
                self._drop_deferred_as_nacks(s)
            return
        r = self._receivers.get(node_id)
        if r is not None and r.state is not RState.GONE:
            self._receiver_lost(r)
            return
        self._send_closed_channel_lost(node.channel)

    def _lose_live_sender(self: Engine, s: Sender) -> None:
        """Cascade on a live sender: its node is already gone, so its messages' links are walked by
        the cascade itself; only report, reset and end here (the hot path of a 10,000-deep cascade)."""
        if s.exposed:
            h = s.handle
            if s.rel_acked:
                for a, b in s.unresolved_reliable():
                    self._out.event(MessagesNacked(h, True, a, b))
            elif s.next_rel > s.rel_prefix:
                self._out.event(MessagesNacked(h, True, s.rel_prefix, s.next_rel))
            if s.next_unrel > s.unrel_resolved:
                self._out.event(MessagesNacked(h, False, s.unrel_resolved, s.next_unrel))
        s.rel_prefix = s.next_rel
        s.rel_acked.clear()
        s.unrel_resolved = s.next_unrel
        self._reset_message_streams(s, ResetCode.LOST)
        if s.ctrl is not None and s.ctrl_open:
            s.ctrl_open = False
            self._streams.reset(s.ctrl, ResetCode.LOST)
        self._sender_gone(s, EndReason.LOST)

    def _drop_deferred_as_nacks(self: Engine, s: Sender) -> None:
        if not s.deferred:
            return
        deferred, s.deferred = s.deferred, []
        if s.exposed:
            for reliable, first, stop in deferred:
                self._out.event(MessagesNacked(s.handle, reliable, first, stop))
        self._maybe_forget_sender(s)

    def _send_closed_channel_lost(self: Engine, channel: int) -> None:
        self._streams.open_uni(encode_frame(ClosedChannelLost(channel)), fin=True)

    def _on_closed_channel_lost(self: Engine, channel: ChannelId) -> None:
        if channel.minted_by is self._side:
            raise ProtocolError(f"ClosedChannelLost for channel {channel}, which we minted")
        r = self._halves.drop_pending(channel)
        if r is None or self._halves.receivers.get(r.handle) is not r:
            return
        if r.state is not RState.GONE:
            self._receiver_lost(r)
        r.app_dropped = True
        self._discard_queues([r], lost=True)
        self._maybe_forget_receiver(r)

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

from ..wire.channel_id import ChannelId
from ..wire.errors import ProtocolError
from ..wire.frames import ClosedChannelLost, encode_frame
from .links import Node
from .receiver import RState
from .sender import SState

if TYPE_CHECKING:
    from .engine import Engine


class LossMixin:
    """Glue between the link walks and the halves."""

    def _on_reachable(self: Engine, node_id: int) -> None:
        s = self._senders.get(node_id)
        if s is not None:
            self._tx.became_reachable(s)

    def _on_lost(self: Engine, node_id: int, node: Node) -> None:
        if node.is_sender:
            s = self._senders.get(node_id)
            if s is not None and s.state is not SState.GONE:
                if s.ctrl is not None and not s.ctrl_open:
                    # finished or cancelled: our direction is closed, so the peer learns it this way
                    self._send_closed_channel_lost(node.channel)
                self._tx.drop_deferred_as_nacks(s)
                self._tx.lose(s)
                return
            self._send_closed_channel_lost(node.channel)
            if s is not None:
                self._tx.drop_deferred_as_nacks(s)
            return
        r = self._receivers.get(node_id)
        if r is not None and r.state is not RState.GONE:
            self._receiver_lost(r)
            return
        self._send_closed_channel_lost(node.channel)

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

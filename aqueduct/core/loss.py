"""What reachability and cascading loss do to halves (spec: "reachable", "Cascading loss detection",
"ClosedChannelLost"); the walks themselves are creation.py's.

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

Loss holds no state: it is the glue the link walks call (Senders gets its
two methods through `set_loss`), and it changes halves only through
sending.py and receiving.py.
"""

from __future__ import annotations

from ..wire.channel_id import ChannelId, Side
from ..wire.errors import ProtocolError
from ..wire.frames import ClosedChannelLost, encode_frame
from .creation import Node
from .halves import Halves
from .receiver import RState
from .receiving import Receivers
from .sender import SState
from .sending import Senders
from .streams import StreamTable


class Loss:
    """Glue between the link walks and the halves."""

    def __init__(self, side: Side, streams: StreamTable, halves: Halves, tx: Senders, rx: Receivers) -> None:
        self._side = side
        self._streams = streams
        self._senders = halves.senders
        self._receivers = halves.receivers
        self._tx = tx
        self._rx = rx
        tx.set_loss(self.on_reachable, self.on_lost)

    def on_reachable(self, node_id: int) -> None:
        """A half became reachable."""
        s = self._senders.get(node_id)
        if s is not None:
            self._tx.became_reachable(s)

    def on_lost(self, node_id: int, node: Node) -> None:
        """A cascade reached a half."""
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
            self._rx.lose(r)
            return
        self._send_closed_channel_lost(node.channel)

    def _send_closed_channel_lost(self, channel: int) -> None:
        self._streams.open_uni(encode_frame(ClosedChannelLost(channel)), fin=True)

    def on_closed_channel_lost(self, channel: ChannelId) -> None:
        """The peer's ClosedChannelLost(channel)."""
        if channel.minted_by is self._side:
            raise ProtocolError(f"ClosedChannelLost for channel {channel}, which we minted")
        self._rx.lost_notice(channel)

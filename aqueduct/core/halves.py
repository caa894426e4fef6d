"""The halves of one connection: every local sender and receiver by handle, the live ones by channel, and
the two filters that keep late messages from making ghost receivers.

Handles are ints allocated in order (never reused within a connection); the
application holds them, so a half stays in `senders`/`receivers` until it
ended and the application dropped it (or never saw it). `tx_of`/`rx_of`
map a channel ID to its live half only: a half leaves them when it ends,
and a later half for the same channel (a ghost receiver, spec: "ghost
receivers") can take its place.

Pending receivers (spec: "if a receiver does not locally exist for the
message's channel ID, and the channel ID was minted by the remote side, it
must create a new receiver"): a receiver made for a message that arrived
before the message attaching its channel is "unclaimed" until that
message hands it out; `unclaimed` maps its channel to it, bounded by
EngineConfig.max_pending_receivers.

Two filters, both with false negatives only (spec: "An Aqueduct
implementation may keep a record of recently discarded receivers"):
- discarded: the last `discarded_filter_size` channels whose receiver
  ended; a message for one of them is dropped instead of making a ghost;
- claimed: per index space (the ID's three low bits), the indexes of
  peer-minted channels whose receiver a message handed out, kept as ranges
  (the peer mints in order, so they stay few; beyond max(64,
  discarded_filter_size) ranges the oldest go).

This module is the only writer of these tables and of ReceiverRecord.claimed.
Limits: max_channels counts senders plus receivers.
"""

from __future__ import annotations

from collections import deque

from ..wire.channel_id import ChannelId
from .config import EngineConfig
from .rangeset import RangeSet
from .receiver import ReceiverRecord
from .sender import SenderRecord


class Halves:
    """Senders and receivers by handle and by channel, pending receivers, and the ghost filters."""

    def __init__(self, config: EngineConfig) -> None:
        self._config = config
        self._next_handle = 1
        self.senders: dict[int, SenderRecord] = {}
        self.receivers: dict[int, ReceiverRecord] = {}
        self.tx_of: dict[int, SenderRecord] = {}
        """Channel ID -> its live sender."""
        self.rx_of: dict[int, ReceiverRecord] = {}
        """Channel ID -> its live receiver."""
        self.unclaimed: dict[int, ReceiverRecord] = {}
        """Channel ID -> a receiver made before the message that hands it out (kept after it ends, until that
        message or ClosedChannelLost)."""
        self._discarded: deque[int] | None = None
        """The ghost filter's channels, oldest first, with `_discarded_set`; made at its first entry (an empty deque
        costs ~600 B, and an idle connection ends no receiver)."""
        self._discarded_set: set[int] = set()
        self._claimed: dict[int, RangeSet] = {}

    def count(self) -> int:
        """Senders plus receivers held (what max_channels bounds)."""
        return len(self.senders) + len(self.receivers)

    def _handle(self) -> int:
        h = self._next_handle
        self._next_handle += 1
        return h

    def add_sender(self, channel: ChannelId, *, reachable: bool, exposed: bool) -> SenderRecord:
        """A new live sender for `channel`."""
        h = self._handle()
        s = self.senders[h] = SenderRecord(h, channel, reachable=reachable, exposed=exposed)
        self.tx_of[channel] = s
        return s

    def add_receiver(self, channel: ChannelId, *, exposed: bool, claimed: bool) -> ReceiverRecord:
        """A new live receiver for `channel` (pending until claimed, if not `claimed`)."""
        h = self._handle()
        r = self.receivers[h] = ReceiverRecord(h, channel, exposed=exposed, claimed=claimed,
                                               ack_on_take=self._config.ack_on_take)
        self.rx_of[channel] = r
        if not claimed:
            self.unclaimed[channel] = r
        return r

    def claim(self, channel: int) -> ReceiverRecord | None:
        """A message hands out the pending receiver of `channel`, if there is one."""
        r = self.unclaimed.pop(channel, None)
        if r is not None:
            r.claimed = True
        return r

    def drop_pending(self, channel: int) -> ReceiverRecord | None:
        """Stop keeping the pending receiver of `channel` (its creating message will never come)."""
        return self.unclaimed.pop(channel, None)

    def sender_ended(self, s: SenderRecord) -> None:
        """`s` is no longer the live sender of its channel."""
        if self.tx_of.get(s.channel) is s:
            del self.tx_of[s.channel]

    def receiver_ended(self, r: ReceiverRecord) -> None:
        """`r` is no longer the live receiver of its channel, which joins the discarded filter."""
        if self.rx_of.get(r.channel) is r:
            del self.rx_of[r.channel]
        self.remember_discarded(r.channel)

    def forget_sender(self, s: SenderRecord) -> None:
        """The sender ended and nobody holds its handle any more."""
        if self.senders.get(s.handle) is s:
            del self.senders[s.handle]

    def forget_receiver(self, r: ReceiverRecord) -> None:
        """The receiver ended and nobody holds its handle any more."""
        if self.receivers.get(r.handle) is r:
            del self.receivers[r.handle]

    # ---- the ghost filters ----
    def remember_discarded(self, channel: int) -> None:
        """The receiver of `channel` ended (the oldest entry goes beyond discarded_filter_size)."""
        size = self._config.discarded_filter_size
        if channel in self._discarded_set or size <= 0:
            return
        discarded = self._discarded
        if discarded is None:
            discarded = self._discarded = deque()
        discarded.append(channel)
        self._discarded_set.add(channel)
        while len(discarded) > size:
            self._discarded_set.discard(discarded.popleft())

    def recently_discarded(self, channel: int) -> bool:
        """Whether a receiver of `channel` ended lately."""
        return channel in self._discarded_set

    def mark_claimed(self, channel: int) -> None:
        """A message handed out this channel's receiver: any later pending receiver for it is a ghost."""
        cid = ChannelId(channel)
        ranges = self._claimed.get(cid.space)
        if ranges is None:
            ranges = self._claimed[cid.space] = RangeSet()
        index = cid.index
        ranges.add(index, index + 1)
        if len(ranges) > max(64, self._config.discarded_filter_size):
            ranges.drop_first()

    def was_claimed(self, channel: int) -> bool:
        """Whether a message handed out a receiver of `channel` (false negatives only)."""
        cid = ChannelId(channel)
        ranges = self._claimed.get(cid.space)
        return ranges is not None and cid.index in ranges

    def clear_live(self) -> None:
        """Connection over: no channel has a live half or a pending receiver any more."""
        self.tx_of.clear()
        self.rx_of.clear()
        self.unclaimed.clear()

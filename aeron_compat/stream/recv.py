"""Receive side of the Stream protocol: packet-number ranges for ACKs, and per-stream reassembly.

Theory: `ReceivedPackets` keeps the packet numbers seen as disjoint inclusive
ranges, newest first, at most `max_ranges` of them (older ones are forgotten:
the peer has long since given up on them or resent their data under new
numbers); `ack_entries` turns them into the wire's range/gap/range entries.
`RecvStream` holds one stream's bytes by offset: data at the read offset moves
straight to `readable`, anything ahead waits in `chunks` until the hole is
filled, and data beyond `read_offset + window` is refused (not acked) so the
sender resends it later: that is the receiver's flow limit.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from aeron_compat.stream.errors import StreamProtocolError


class ReceivedPackets:
    """The set of received packet numbers as bounded ranges."""

    def __init__(self, max_ranges: int) -> None:
        self.max_ranges = max_ranges
        self.ranges: list[list[int]] = []  # [low, high], ascending, disjoint, non-adjacent

    def __len__(self) -> int:
        return len(self.ranges)

    @property
    def largest(self) -> int:
        return self.ranges[-1][1] if self.ranges else -1

    def add(self, pn: int) -> bool:
        """Record `pn`; False if it was already recorded (a duplicate)."""
        r = self.ranges
        if r and pn == r[-1][1] + 1:
            r[-1][1] = pn
            return True
        i = bisect.bisect_right(r, [pn, 1 << 65])
        if i and r[i - 1][0] <= pn <= r[i - 1][1]:
            return False
        if r and self.max_ranges and i == 0 and len(r) >= self.max_ranges and pn < r[0][0] - 1:
            return True  # older than everything remembered: ack would not fit; treat as seen
        left = i > 0 and r[i - 1][1] == pn - 1
        right = i < len(r) and r[i][0] == pn + 1
        if left and right:
            r[i - 1][1] = r[i][1]
            del r[i]
        elif left:
            r[i - 1][1] = pn
        elif right:
            r[i][0] = pn
        else:
            r.insert(i, [pn, pn])
            if len(r) > self.max_ranges:
                del r[0]
        return True

    def ack_entries(self, max_entries: int) -> tuple[int, tuple[int, ...]]:
        """(largest, entries) for an ACK: range, gap, range... highest first, at most `max_entries`."""
        entries: list[int] = []
        high = self.ranges[-1][1]
        for low_high in reversed(self.ranges):
            low, top = low_high
            if entries:
                if len(entries) + 2 > max_entries:
                    break
                entries.append(high - top)
            entries.append(top - low + 1)
            high = low - 1
        return self.ranges[-1][1], tuple(entries)


@dataclass
class RecvStream:
    """One stream's reassembly buffer."""

    window: int
    max_chunks: int
    read_offset: int = 0  # first byte not yet moved to `readable`
    readable: bytearray = field(default_factory=bytearray)
    chunks: dict[int, bytes] = field(default_factory=dict)
    buffered: int = 0  # bytes in `chunks`
    fin_offset: int | None = None
    delivered_fin: bool = False

    @property
    def consumed(self) -> int:
        return self.read_offset - len(self.readable)

    def accept(self, offset: int, data: bytes, fin: bool) -> bool:
        """Take one DATA's bytes; False if refused for lack of room (the packet must not be acked)."""
        end = offset + len(data)
        if fin:
            if self.fin_offset is not None and self.fin_offset != end:
                raise StreamProtocolError(f"FIN moved from {self.fin_offset} to {end}")
            if end < self.read_offset + self.buffered_end_gap():
                raise StreamProtocolError("FIN below data already received")
        if self.fin_offset is not None and end > self.fin_offset:
            raise StreamProtocolError(f"data up to {end} past FIN at {self.fin_offset}")
        if end > self.consumed + self.window:
            return False
        if end <= self.read_offset:
            if fin:
                self.fin_offset = end
            return True
        if offset > self.read_offset and offset not in self.chunks and len(self.chunks) >= self.max_chunks:
            return False
        if fin:
            self.fin_offset = end
        if offset <= self.read_offset:
            self.readable += data[self.read_offset - offset:]
            self.read_offset = end
            self._drain()
        else:
            old = self.chunks.get(offset)
            if old is None or len(old) < len(data):
                self.buffered += len(data) - (len(old) if old else 0)
                self.chunks[offset] = data
        return True

    def buffered_end_gap(self) -> int:
        """Bytes beyond the read offset that some chunk already covers (for the FIN check)."""
        if not self.chunks:
            return 0
        return max(o + len(d) for o, d in self.chunks.items()) - self.read_offset

    def _drain(self) -> None:
        while self.chunks:
            ready = [o for o in self.chunks if o <= self.read_offset]
            if not ready:
                return
            for o in ready:
                d = self.chunks.pop(o)
                self.buffered -= len(d)
                if o + len(d) > self.read_offset:
                    self.readable += d[self.read_offset - o:]
                    self.read_offset = o + len(d)

    def read(self, limit: int = -1) -> bytes:
        """Up to `limit` in-order bytes (all when negative)."""
        n = len(self.readable) if limit < 0 else min(limit, len(self.readable))
        out = bytes(self.readable[:n])
        del self.readable[:n]
        return out

    @property
    def finished(self) -> bool:
        """The FIN has arrived and every byte before it has been read."""
        return self.fin_offset is not None and self.read_offset == self.fin_offset and not self.readable

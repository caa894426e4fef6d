"""Receive side of the Stream protocol: packet-number ranges for ACKs, and per-stream reassembly.

Theory: `ReceivedPackets` keeps the packet numbers seen as disjoint inclusive
ranges (ranges.py), at most `max_ranges` of them (older ones are forgotten:
the peer has long since given up on them or resent their data under new
numbers); `ack_entries` turns them into the wire's range/gap/range entries.
`RecvStream` holds one stream's bytes by offset: data at the read offset moves
straight to `readable`, anything ahead waits in `chunks` (a sorted dict of
disjoint ranges: a piece is trimmed to the bytes its neighbours lack, so
overlapping resends are never held twice) until the hole is filled, and data
beyond `read_offset + window` is refused (not acked) so the sender resends it
later: that is the receiver's flow limit. The connection passes `room`, what
its own bound (`recv_connection_window`) still allows, to each `accept`.
Placing and draining cost O(log n) per chunk touched, so thousands of tiny
out-of-order chunks cost n log n, never n squared.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sortedcontainers import SortedDict

from aeron_compat.marlin.errors import StreamProtocolError
from aeron_compat.marlin.ranges import Ranges


class ReceivedPackets(Ranges):
    """The set of received packet numbers as bounded ranges (the oldest forgotten)."""

    @property
    def largest(self) -> int:
        return self.ranges[-1][1] if self.ranges else -1

    def add(self, pn: int) -> bool:
        """Record `pn`; False if it was already recorded (a duplicate)."""
        r = self.ranges
        if r and self.max_ranges and len(r) >= self.max_ranges and pn < r[0][0] - 1:
            return True  # older than everything remembered: ack would not fit; treat as seen
        return super().add(pn)

    def _overflow(self) -> None:
        del self.ranges[0]

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
    """One stream's reassembly buffer.

    `chunks` maps offset -> bytes for data ahead of the read offset: a sorted dict of disjoint ranges
    (sortedcontainers), so a piece is placed, trimmed against its neighbours and later drained in
    O(log n) per chunk it touches, and no byte is held twice. `held` (readable plus chunks) is what the
    connection counts against its own bound (`accept`'s `room`).
    """

    window: int
    max_chunks: int
    read_offset: int = 0  # first byte not yet moved to `readable`
    readable: bytearray = field(default_factory=bytearray)
    chunks: SortedDict = field(default_factory=SortedDict)  # offset -> bytes, disjoint, all past read_offset
    buffered: int = 0  # bytes in `chunks`
    fin_offset: int | None = None
    delivered_fin: bool = False

    @property
    def consumed(self) -> int:
        return self.read_offset - len(self.readable)

    @property
    def held(self) -> int:
        """Bytes this stream holds: readable plus out of order."""
        return self.buffered + len(self.readable)

    def received_end(self) -> int:
        """One past the highest byte received so far."""
        if not self.chunks:
            return self.read_offset
        last, data = self.chunks.peekitem(-1)
        return int(last) + len(data)

    def accept(self, offset: int, data: bytes, fin: bool, room: int | None = None) -> bool:
        """Take one DATA's bytes; False if refused for lack of room (the packet must not be acked).

        `room` is what the connection still lets this stream add to what it holds (None: no bound). Data
        at the read offset of a stream with nothing readable is taken even beyond it, so a reader the
        bound has starved always gets the bytes it waits for (the bound is then exceeded by at most one
        packet per stream).
        """
        end = offset + len(data)
        if fin:
            if self.fin_offset is not None and self.fin_offset != end:
                raise StreamProtocolError(f"FIN moved from {self.fin_offset} to {end}")
            if end < self.received_end():
                raise StreamProtocolError("FIN below data already received")
        if self.fin_offset is not None and end > self.fin_offset:
            raise StreamProtocolError(f"data up to {end} past FIN at {self.fin_offset}")
        if end > self.consumed + self.window:
            return False
        start = max(offset, self.read_offset)
        if end <= start:
            if fin:
                self.fin_offset = end
            return True
        if offset <= self.read_offset:
            if room is not None and self.readable and end - start - self._covered(start, end) > room:
                return False
            if fin:
                self.fin_offset = end
            self.readable += data[start - offset:]
            self.read_offset = end
            self._drain()
            return True
        return self._insert(offset, data, fin, room)

    def _covered(self, start: int, end: int) -> int:
        """Bytes of [start, end) some chunk already holds."""
        chunks = self.chunks
        total = 0
        i = max(chunks.bisect_right(start) - 1, 0)
        for key in chunks.islice(i):
            if key >= end:
                break
            total += max(0, min(end, key + len(chunks[key])) - max(start, key))
        return total

    def _insert(self, offset: int, data: bytes, fin: bool, room: int | None) -> bool:
        """Place out-of-order data: trimmed to what its neighbours lack; chunks it covers whole give way to it."""
        chunks = self.chunks
        start, stop = offset, offset + len(data)
        i = chunks.bisect_right(start) - 1
        if i >= 0:
            left, ldata = chunks.peekitem(i)
            if left + len(ldata) >= stop:
                if fin:
                    self.fin_offset = stop
                return True  # nothing new
            start = max(start, left + len(ldata))
        inside = list(chunks.irange(start, stop, inclusive=(True, False)))
        if inside and inside[-1] + len(chunks[inside[-1]]) > stop:
            stop = inside.pop()  # the right neighbour keeps its bytes; ours end where it starts
        if stop <= start:
            if fin:
                self.fin_offset = offset + len(data)
            return True  # nothing new
        gone = sum(len(chunks[k]) for k in inside)
        if len(chunks) - len(inside) + 1 > self.max_chunks:
            return False
        if room is not None and stop - start - gone > room:
            return False
        if fin:
            self.fin_offset = offset + len(data)
        for k in inside:
            del chunks[k]
        chunks[start] = data[start - offset:stop - offset]
        self.buffered += stop - start - gone
        return True

    def _drain(self) -> None:
        """Move every chunk the read offset has reached into `readable` (each chunk is visited once)."""
        chunks = self.chunks
        while chunks:
            key = chunks.keys()[0]
            if key > self.read_offset:
                return
            d = chunks.pop(key)
            self.buffered -= len(d)
            if key + len(d) > self.read_offset:
                self.readable += d[self.read_offset - key:]
                self.read_offset = key + len(d)

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

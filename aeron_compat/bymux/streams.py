"""The active streams of a bymux endpoint, and the ids it may create (spec Appendix A).

Theory of operation: a stream is in the table from creation (ours or the peer's) until it ended
(Close and StopRead both sent and received); only then is its id free again.  This side creates
ids of one parity (even for the initiator): a freed id of that parity is reused first, lowest
first, else the next never-used one.  The table is the only writer of that bookkeeping.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from .state import StreamState


class StreamTable:
    """Active streams by id, with the allocation of this side's ids."""

    def __init__(self, parity: int) -> None:
        self.parity = parity
        self._streams: dict[int, StreamState] = {}
        self._free: list[int] = []
        self._next = parity

    def __contains__(self, stream_id: object) -> bool:
        return stream_id in self._streams

    def __iter__(self) -> Iterator[int]:
        return iter(self._streams)

    def __getitem__(self, stream_id: int) -> StreamState:
        return self._streams[stream_id]

    def get(self, stream_id: int) -> StreamState | None:
        """The active stream `stream_id`, or None."""
        return self._streams.get(stream_id)

    def states(self) -> Iterator[StreamState]:
        """The active streams."""
        return iter(self._streams.values())

    def add(self, stream: StreamState) -> None:
        """A stream became active (created by us or by the peer)."""
        self._streams[stream.stream_id] = stream

    def end(self, stream_id: int) -> None:
        """The stream ended: forget it, and free its id if it is one of ours."""
        del self._streams[stream_id]
        if stream_id % 2 == self.parity:
            heapq.heappush(self._free, stream_id)

    def pick(self) -> int:
        """An id of ours for a new stream: the lowest freed one, else the next never used."""
        while self._free and self._free[0] in self._streams:
            heapq.heappop(self._free)
        if self._free:
            return heapq.heappop(self._free)
        while self._next in self._streams:
            self._next += 2
        self._next += 2
        return self._next - 2

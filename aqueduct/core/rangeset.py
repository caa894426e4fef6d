"""Sets of message numbers as sorted, disjoint half-open ranges.

Ack and nack bookkeeping needs "which numbers are in", "what is the
contiguous prefix", and "which runs are missing between a and b". Numbers
arrive mostly in order, so a sorted list of [start, stop) ranges stays
short; `add` merges neighbours, `discard_below` forgets what a prefix made
redundant, so memory tracks the holes, not the history. An empty set holds
the shared empty tuple instead of two lists (most per-channel ledgers are
empty while a channel idles), and returns to it whenever it empties.

Spec: none (the data structure behind "positive negative range data" bookkeeping).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator

_NONE: tuple[()] = ()


class RangeSet:
    """A set of non-negative ints stored as sorted disjoint [start, stop) ranges."""

    __slots__ = ("_starts", "_stops")

    def __init__(self) -> None:
        self._starts: list[int] | tuple[()] = _NONE
        self._stops: list[int] | tuple[()] = _NONE

    def __len__(self) -> int:
        """Number of ranges (not of numbers)."""
        return len(self._starts)

    def __bool__(self) -> bool:
        return bool(self._starts)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        """The ranges, in order."""
        return iter(list(zip(self._starts, self._stops, strict=True)))

    def __contains__(self, n: int) -> bool:
        i = bisect_right(self._starts, n) - 1
        return i >= 0 and n < self._stops[i]

    def count(self) -> int:
        """Number of numbers in the set."""
        return sum(b - a for a, b in zip(self._starts, self._stops, strict=True))

    def overlaps(self, start: int, stop: int) -> bool:
        """Whether any number of [start, stop) is in the set."""
        i = bisect_right(self._starts, stop - 1) - 1
        return i >= 0 and self._stops[i] > start

    def add(self, start: int, stop: int) -> None:
        """Add [start, stop), merging with touching ranges."""
        if stop <= start:
            return
        starts, stops = self._starts, self._stops
        if not isinstance(stops, list) or not isinstance(starts, list):
            self._starts, self._stops = [start], [stop]
            return
        if start > stops[-1]:  # the common case: numbers arrive in order
            starts.append(start)
            stops.append(stop)
            return
        if start >= starts[-1]:
            if stop > stops[-1]:
                stops[-1] = stop
            return
        lo = bisect_right(stops, start - 1)  # first range whose stop >= start
        hi = bisect_right(starts, stop)  # ranges before hi have start <= stop
        if lo < hi:
            start = min(start, starts[lo])
            stop = max(stop, stops[hi - 1])
        starts[lo:hi] = [start]
        stops[lo:hi] = [stop]

    def add_one(self, n: int) -> None:
        """Add n (the common case, n just past the last range, extends it in place)."""
        stops = self._stops
        if type(stops) is list and stops[-1] == n:
            stops[-1] = n + 1
        else:
            self.add(n, n + 1)

    def prefix_end(self, base: int) -> int:
        """The first number >= base that is not in the set."""
        i = bisect_right(self._starts, base) - 1
        if i >= 0 and self._stops[i] > base:
            return self._stops[i]
        return base

    def discard_below(self, n: int) -> None:
        """Forget every number below n."""
        starts, stops = self._starts, self._stops
        if not isinstance(stops, list) or not isinstance(starts, list):
            return
        i = bisect_right(stops, n)
        if i == len(stops):
            self._starts, self._stops = _NONE, _NONE
            return
        del starts[:i]
        del stops[:i]
        if starts[0] < n:
            starts[0] = n

    def max_stop(self) -> int:
        """One past the largest number, or 0 when empty."""
        return self._stops[-1] if self._stops else 0

    def next_start_at_or_after(self, n: int) -> int | None:
        """The start of the first range beginning at or after n."""
        i = bisect_right(self._starts, n - 1)
        return self._starts[i] if i < len(self._starts) else None

    def runs(self, start: int, stop: int) -> Iterator[tuple[int, int, bool]]:
        """Cover [start, stop) with (first, stop, in_set) runs, in order."""
        at = start
        i = bisect_right(self._stops, start)
        while at < stop:
            if i < len(self._starts) and self._starts[i] <= at:
                end = min(self._stops[i], stop)
                yield at, end, True
                i += 1
            else:
                nxt = self._starts[i] if i < len(self._starts) else stop
                end = min(nxt, stop)
                yield at, end, False
            at = end

    def drop_first(self) -> None:
        """Forget the lowest range."""
        starts, stops = self._starts, self._stops
        if len(stops) <= 1 or not isinstance(stops, list) or not isinstance(starts, list):
            self._starts, self._stops = _NONE, _NONE
            return
        del starts[0]
        del stops[0]

    def clear(self) -> None:
        """Remove everything."""
        self._starts, self._stops = _NONE, _NONE

"""Sets of integers held as a bounded number of disjoint ranges: received packet numbers, used stream ids.

Theory: `Ranges` keeps inclusive [low, high] ranges, ascending, disjoint and
never adjacent, so a run of consecutive numbers costs one range whatever its
length. At most `max_ranges` are kept; what gives way when one more would be
needed is the subclass's choice (`_overflow`): by default the lowest gap is
filled (the set only grows: a number once in stays in, and a few never added
come in with it), while `recv.ReceivedPackets` forgets its oldest range.
`StreamIds` maps stream ids so that each parity (each side's own ids,
decision MARLIN-7) is one contiguous run: ids a side opens in order are one
range.
"""

from __future__ import annotations

import bisect

_ABOVE = 1 << 65  # sorts after any [n, high] with the same n


class Ranges:
    """A set of integers as at most `max_ranges` disjoint inclusive ranges."""

    def __init__(self, max_ranges: int) -> None:
        self.max_ranges = max_ranges
        self.ranges: list[list[int]] = []  # [low, high], ascending, disjoint, non-adjacent

    def __len__(self) -> int:
        return len(self.ranges)

    def __contains__(self, n: int) -> bool:
        r = self.ranges
        i = bisect.bisect_right(r, [n, _ABOVE])
        return i > 0 and r[i - 1][0] <= n <= r[i - 1][1]

    def add(self, n: int) -> bool:
        """Record `n`; False if it was already in."""
        r = self.ranges
        if r and n == r[-1][1] + 1:
            r[-1][1] = n
            return True
        i = bisect.bisect_right(r, [n, _ABOVE])
        if i and r[i - 1][0] <= n <= r[i - 1][1]:
            return False
        left = i > 0 and r[i - 1][1] == n - 1
        right = i < len(r) and r[i][0] == n + 1
        if left and right:
            r[i - 1][1] = r[i][1]
            del r[i]
        elif left:
            r[i - 1][1] = n
        elif right:
            r[i][0] = n
        else:
            r.insert(i, [n, n])
            if len(r) > self.max_ranges:
                self._overflow()
        return True

    def _overflow(self) -> None:
        """One range too many: fill the lowest gap (the numbers in it count as added)."""
        r = self.ranges
        if len(r) > 1:
            r[0][1] = r[1][1]
            del r[1]


class StreamIds:
    """The stream ids one direction of a connection ever used, in at most `max_ranges` ranges."""

    def __init__(self, max_ranges: int) -> None:
        self._ranges = Ranges(max_ranges)

    @staticmethod
    def _key(stream_id: int) -> int:
        return (stream_id & 1) << 15 | stream_id >> 1  # even ids 0..32767, odd ids 32768..65535

    def __len__(self) -> int:
        return len(self._ranges)

    def __contains__(self, stream_id: int) -> bool:
        return self._key(stream_id) in self._ranges

    def add(self, stream_id: int) -> None:
        self._ranges.add(self._key(stream_id))

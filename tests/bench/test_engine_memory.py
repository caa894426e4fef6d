"""Issue 8's memory budget: an open, idle channel costs both engines together under 2 KiB (tracemalloc)."""

from __future__ import annotations

import sys
import tracemalloc

from aqueduct.bench.engine import idle_channel_bytes
from aqueduct.core.rangeset import RangeSet


def test_idle_channel_costs_both_engines_under_2_kib() -> None:
    assert idle_channel_bytes(2_000) < 2048


def test_empty_and_emptied_rangesets_hold_no_lists() -> None:
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    sets = [RangeSet() for _ in range(1_000)]
    for i, rs in enumerate(sets):
        rs.add(i, i + 5)
        rs.add(i + 10, i + 11)
        if i % 2:
            rs.discard_below(i + 11)
        else:
            rs.clear()
    per_set = (tracemalloc.get_traced_memory()[0] - base) / len(sets)
    tracemalloc.stop()
    assert all(not rs and rs.count() == 0 for rs in sets)
    # the object alone (its size differs compiled and pure) and its slot in `sets`: one empty list held would add 56 B
    assert per_set < sys.getsizeof(RangeSet()) + 8 + sys.getsizeof([]) // 2

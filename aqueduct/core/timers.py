"""Deadlines keyed by what they are for.

Each key, a `(TimerKind, handle)` pair (the engine dispatches on the kind: `Engine.handle_timer`), has at
most one deadline; setting it again
replaces it, cancelling removes it. A heap with lazy deletion gives the
earliest deadline cheaply; `due(now)` pops every key whose deadline passed.
The engine never sleeps: it reports `next()` and is called back at that time.

Spec: none (engine plumbing: the deadlines of acks, nacks and SentUnreliable).
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from enum import IntEnum
from typing import Final


class TimerKind(IntEnum):
    """What a deadline is for; its key is `(kind, handle)`."""

    SENT_UNRELIABLE = 1
    """A sender's SentUnreliable is due (sending.py; the handle: the sender's)."""
    PARTIAL_FRAME = 2
    """A stream's partial frame has waited too long (flow.py; the handle: the stream ID)."""
    ACKS = 3
    """A receiver's acks and nacks are due (receiving.py; the handle: the receiver's)."""


SENT_UNRELIABLE: Final = TimerKind.SENT_UNRELIABLE
PARTIAL_FRAME: Final = TimerKind.PARTIAL_FRAME
ACKS: Final = TimerKind.ACKS
"""The kinds as module constants (the hot paths read a constant, not an enum class's attribute)."""


class Timers:
    """A set of keyed deadlines."""

    def __init__(self) -> None:
        self._at: dict[Hashable, float] = {}
        self._heap: list[tuple[float, int, Hashable]] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self._at)

    def set(self, key: Hashable, when: float) -> None:
        """Arm (or move) the deadline for `key`."""
        if self._at.get(key) == when:
            return
        self._at[key] = when
        self._seq += 1
        heapq.heappush(self._heap, (when, self._seq, key))

    def armed_at(self, key: Hashable) -> float | None:
        """The deadline armed for `key`, if any."""
        return self._at.get(key)

    def set_earlier(self, key: Hashable, when: float) -> None:
        """Arm `key` at `when` unless it is already armed earlier."""
        cur = self._at.get(key)
        if cur is None or when < cur:
            self.set(key, when)

    def cancel(self, key: Hashable) -> None:
        """Disarm `key` (no-op if not armed)."""
        self._at.pop(key, None)

    def _clean(self) -> None:
        heap = self._heap
        while heap and self._at.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)
        if len(heap) > 64 and len(heap) > 4 * len(self._at):
            self._heap = [(w, i, k) for i, (k, w) in enumerate(self._at.items())]
            heapq.heapify(self._heap)

    def next(self) -> float | None:
        """The earliest armed deadline."""
        self._clean()
        return self._heap[0][0] if self._heap else None

    def due(self, now: float) -> list[Hashable]:
        """Disarm and return every key whose deadline is <= now, earliest first."""
        out: list[Hashable] = []
        while True:
            self._clean()
            if not self._heap or self._heap[0][0] > now:
                return out
            _, _, key = heapq.heappop(self._heap)
            del self._at[key]
            out.append(key)

    def clear(self) -> None:
        """Disarm everything."""
        self._at.clear()
        self._heap.clear()

# Agrona's idle strategies, for duty-cycle loops ported from Java: call `idle(work_count)` after
# each round of polling; zero work means "nothing happened" and the strategy decides how to wait.
# With a driver on a background thread, a loop that never waits (BusySpin) keeps the GIL and
# slows the driver down: prefer Backoff or Sleeping there.
"""Idle strategies: NoOp, BusySpin, Yielding, Sleeping and Backoff."""

from __future__ import annotations

import time
from collections.abc import Callable

Sleep = Callable[[float], None]


class NoOpIdleStrategy:
    """Never waits."""

    def idle(self, work_count: int = 0) -> None:
        """Do nothing."""

    def reset(self) -> None:
        """Nothing to reset."""


class BusySpinIdleStrategy(NoOpIdleStrategy):
    """Spins (in Python the same as NoOp: there is no pause instruction to issue)."""


class YieldingIdleStrategy:
    """Gives up the GIL and the CPU for a moment when there was no work."""

    def __init__(self, sleep: Sleep = time.sleep) -> None:
        self._sleep = sleep

    def idle(self, work_count: int = 0) -> None:
        """Yield if `work_count` is 0."""
        if work_count <= 0:
            self._sleep(0)

    def reset(self) -> None:
        """Nothing to reset."""


class SleepingIdleStrategy:
    """Sleeps a fixed period when there was no work."""

    def __init__(self, sleep_period_ns: int = 1_000_000, sleep: Sleep = time.sleep) -> None:
        self.period = sleep_period_ns / 1e9
        self._sleep = sleep

    def idle(self, work_count: int = 0) -> None:
        """Sleep if `work_count` is 0."""
        if work_count <= 0:
            self._sleep(self.period)

    def reset(self) -> None:
        """Nothing to reset."""


class BackoffIdleStrategy:
    """Spin `max_spins` times, then yield `max_yields` times, then sleep, doubling up to the max period."""

    def __init__(self, max_spins: int = 10, max_yields: int = 5, min_park_period_ns: int = 1_000,
                 max_park_period_ns: int = 1_000_000, sleep: Sleep = time.sleep) -> None:
        self.max_spins, self.max_yields = max_spins, max_yields
        self.min_park, self.max_park = min_park_period_ns, max_park_period_ns
        self._sleep = sleep
        self.spins = self.yields = 0
        self.park: int = min_park_period_ns

    def idle(self, work_count: int = 0) -> None:
        """Back off one step if `work_count` is 0, else start over."""
        if work_count > 0:
            self.reset()
        elif self.spins < self.max_spins:
            self.spins += 1
        elif self.yields < self.max_yields:
            self.yields += 1
            self._sleep(0)
        else:
            self._sleep(self.park / 1e9)
            self.park = min(self.park * 2, self.max_park)

    def reset(self) -> None:
        """Back to spinning."""
        self.spins = self.yields = 0
        self.park = self.min_park

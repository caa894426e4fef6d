"""Idle strategies wait as Agrona's do (with a recording sleep instead of real waiting)."""

from __future__ import annotations

from aeron_compat.client.idle import BackoffIdleStrategy, NoOpIdleStrategy, SleepingIdleStrategy, YieldingIdleStrategy


def test_backoff_spins_then_yields_then_parks_doubling() -> None:
    slept: list[float] = []
    idle = BackoffIdleStrategy(max_spins=2, max_yields=2, min_park_period_ns=1000, max_park_period_ns=4000,
                               sleep=slept.append)
    for _ in range(8):
        idle.idle(0)
    assert slept == [0, 0, 1e-6, 2e-6, 4e-6, 4e-6]
    idle.idle(1)
    idle.idle(0)
    assert len(slept) == 6


def test_sleeping_and_yielding_wait_only_without_work() -> None:
    slept: list[float] = []
    SleepingIdleStrategy(500_000, sleep=slept.append).idle(0)
    SleepingIdleStrategy(500_000, sleep=slept.append).idle(3)
    YieldingIdleStrategy(sleep=slept.append).idle(0)
    NoOpIdleStrategy().idle(0)
    assert slept == [0.0005, 0]

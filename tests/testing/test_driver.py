"""The random driver end to end: it runs real engines, catches planted engine bugs, shrinks, and replays."""

from __future__ import annotations

from collections import Counter
from typing import Any

from aqueduct.core.app import AppEvent, AttachKind, Delivered, MessageAvailable, MessagesNacked, SendResult
from aqueduct.core.engine import Engine
from aqueduct.core.transport import GrantCredit, TransportCommand
from aqueduct.errors import ChannelClosed
from aqueduct.testing import NetConfig
from aqueduct.testing.driver import DrivenEngine, EngineFactory, Run, draw, run_seed, shrink
from aqueduct.testing.script import Action, ActionKind
from aqueduct.wire.channel_id import Side


def factory(cls: type[Engine]) -> EngineFactory:
    def make(side: Side) -> DrivenEngine:
        return cls(side)

    return make


def first_failure(cls: type[Engine], seeds: range) -> list[str]:
    for seed in seeds:
        r = run_seed(seed, factory=factory(cls))
        if not r.ok:
            return r.violations
    return []


def test_real_engines_pass_and_the_scripts_do_things() -> None:
    totals: Counter[str] = Counter()
    for seed in range(40):
        r = run_seed(seed)
        assert r.ok, (seed, r.violations)
        totals.update(r.stats)
    assert totals["sent"] > 200 and totals["delivered"] > 100
    assert totals["acked"] > 100 and totals["nacked"] > 0 and totals["datagrams_dropped"] > 0


def test_same_seed_same_run() -> None:
    a, b = run_seed(17), run_seed(17)
    assert (a.stats, a.violations, a.script) == (b.stats, b.violations, b.script)


class DoubleDelivery(Engine):
    """Hands out every message twice."""

    _again: Delivered | None = None

    def take_message(self, receiver: int, now: float | None = None) -> Delivered | None:
        if self._again is not None:
            d, self._again = self._again, None
            return d
        d = super().take_message(receiver, now)
        self._again = d
        return d


class NoNacks(Engine):
    """Never tells the sender about losses."""

    def events(self) -> list[AppEvent]:
        return [e for e in super().events() if not isinstance(e, MessagesNacked)]


class Silent(Engine):
    """Never says a queue became non-empty."""

    def events(self) -> list[AppEvent]:
        return [e for e in super().events() if not isinstance(e, MessageAvailable)]


class Leaky(Engine):
    """Reports a sender it never frees."""

    def state_sizes(self) -> dict[str, int]:
        return {**super().state_sizes(), "senders": 1}


class TimerBomb(Engine):
    """Raises from a timer."""

    def handle_timer(self, now: float) -> None:
        raise RuntimeError("boom")


def test_planted_double_delivery_is_caught() -> None:
    assert any("delivered 2x" in v for v in first_failure(DoubleDelivery, range(20)))


def test_planted_missing_nacks_are_caught() -> None:
    assert any("never acked nor nacked" in v for v in first_failure(NoNacks, range(200)))


def test_planted_missing_message_available_is_caught() -> None:
    assert any("without MessageAvailable" in v for v in first_failure(Silent, range(5)))


def test_planted_leak_is_caught() -> None:
    assert any(v.startswith("leak:") for v in first_failure(Leaky, range(3)))


def test_exceptions_escaping_an_engine_are_violations() -> None:
    assert any("exception RuntimeError: boom" in v for v in first_failure(TimerBomb, range(20)))


def test_shrink_keeps_the_violation_with_fewer_actions() -> None:
    seed = next(s for s in range(200) if not run_seed(s, factory=factory(NoNacks)).ok)
    r = run_seed(seed, factory=factory(NoNacks))
    small = shrink(r, factory(NoNacks))
    assert not small.ok and len(small.script) <= len(r.script)
    replay = Run(seed, small.script, draw(seed)[0], factory(NoNacks)).execute()
    assert replay.violations == small.violations


POKE_SCRIPT = [
    Action(0.0, Side.CLIENT, ActionKind.SEND, attach=(AttachKind.RECEIVER,)),
    Action(0.5, Side.CLIENT, ActionKind.CANCEL, pick=0),
    Action(0.5, Side.CLIENT, ActionKind.POKE, pick=0),
]


class SendsAfterCancel(Engine):
    """Lets a cancelled sender send (swallowing the error)."""

    def send(self, sender: int, payload: bytes, *args: Any, **kwargs: Any) -> SendResult:
        try:
            return super().send(sender, payload, *args, **kwargs)
        except ChannelClosed:
            return SendResult(99, (), None)


def test_late_calls_on_ended_handles_get_documented_outcomes() -> None:
    run = Run(0, POKE_SCRIPT, NetConfig(), strict=True)
    r = run.execute()
    assert r.ok, r.violations
    assert r.stats["skipped"] == 0
    bad = Run(0, POKE_SCRIPT, NetConfig(), factory(SendsAfterCancel), strict=True).execute()
    assert any("send returned SendResult" in v for v in bad.violations)
    assert Run(0, POKE_SCRIPT, NetConfig(), factory(SendsAfterCancel)).execute().ok  # not strict: no late calls


class Generous(Engine):
    """Grants every credit twice."""

    def commands(self) -> list[TransportCommand]:
        out = super().commands()
        return out + [c for c in out if isinstance(c, GrantCredit)]


def test_strict_runs_catch_credit_beyond_consumption() -> None:
    r = run_seed(0, factory=factory(Generous), strict=True)
    assert any(v.startswith("credit beyond consumption") for v in r.violations)

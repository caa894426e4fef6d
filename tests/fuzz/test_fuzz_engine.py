"""CI-sized fuzzing of the engine as a malicious peer (long runs: benchmarks/fuzz_long.py, tests/fuzz/atheris_*.py)."""

from __future__ import annotations

import random

import pytest
from harness import fuzzing
from harness.fuzzing import FUZZ_CONFIG, FuzzFinding, run_engine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqueduct.core.engine import Engine
from aqueduct.core.incoming import Incoming
from aqueduct.wire.errors import CloseCode

SERVER, START = b"\x01", b"\x01"
FLOOD = b"\x10"
STREAM_DATA = b"\x00"


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=1500))
def test_engine_survives_any_program(data: bytes) -> None:
    run_engine(data)


def test_engine_survives_a_seeded_random_corpus() -> None:
    rng = random.Random(20261121)
    closes: dict[int | None, int] = {}
    for _ in range(3000):
        data = rng.randbytes(rng.randint(0, 800))
        code = run_engine(data).closed_code
        closes[code] = closes.get(code, 0) + 1
    # the corpus reaches both outcomes: connections that live on and ones closed with a code
    assert closes.get(None, 0) > 0 and sum(v for k, v in closes.items() if k is not None) > 0


def test_flood_of_never_created_channels_is_cut_off_at_the_pending_limit() -> None:
    program = SERVER + START + FLOOD + b"\x00" + bytes([47]) + bytes(48)
    run = run_engine(program)
    assert run.closed_code == CloseCode.LIMIT_EXCEEDED
    assert run.max_sizes["pending_receivers"] <= FUZZ_CONFIG.max_pending_receivers


def test_huge_declared_length_closes_with_limit_exceeded() -> None:
    # stream data on client uni stream 2, payload mode 1 (huge declared length 2**59 + 0)
    program = SERVER + START + STREAM_DATA + b"\x00\x02" + b"\x01" + b"\x27\x00\x00"
    run = run_engine(program)
    assert run.closed_code == CloseCode.LIMIT_EXCEEDED
    assert run.max_sizes.get("held_bytes", 0) <= FUZZ_CONFIG.max_buffered_bytes


def test_harness_reports_an_escaping_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Incoming, event: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(Incoming, "dispatch", broken)
    with pytest.raises(FuzzFinding, match="KeyError escaped"):
        run_engine(SERVER + START + STREAM_DATA + b"\x00\x02\x03")


def test_harness_reports_a_bound_exceeded(monkeypatch: pytest.MonkeyPatch) -> None:
    real = Engine.state_sizes

    def inflated(self: Engine) -> dict[str, int]:
        return {**real(self), "pending_receivers": fuzzing.FUZZ_CONFIG.max_pending_receivers + 1}

    monkeypatch.setattr(Engine, "state_sizes", inflated)
    with pytest.raises(FuzzFinding, match="pending_receivers"):
        run_engine(SERVER + START)

"""benchmarks/independent/harness.py --quick: every row did what its name says, proven by the far side's counts.

The harness runs as a user would run it (its own processes: three servers, three clients, an orchestrator),
writes every row of every round with the counters its server read before and after the row, and this test
checks those counters itself (not through the harness's own check): the Aqueduct request rows' server saw one
request and one new networked reply channel per call and no service call; the service row's server counted
every call as a service call and no plain request; grpcio's server counted every call, each over TLS, on the
one connection the client opened; each connect row's server saw one new connection per connect, all accepted
as 0-RTT in the 0-RTT rows and none in the 1-RTT rows. It also checks the harness refuses `--require-wheel`
in a checkout. Tiny sizes; no timing asserted.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import aqueduct

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "benchmarks" / "independent" / "harness.py"

pytestmark = pytest.mark.timeout(400)


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(HARNESS), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=360)


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    tmp = tmp_path_factory.mktemp("independent")
    done = _run("--quick", "--json", str(tmp / "rows.json"), "--workdir", str(tmp), cwd=tmp)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [p.name for p in tmp.iterdir()] == ["rows.json"]  # (its certificates were removed)
    return json.loads((tmp / "rows.json").read_text()), done.stdout


def _rows(data: dict[str, Any], system: str) -> list[dict[str, Any]]:
    return [row for result in data["rounds"] for row in result[system].values()]


def test_every_round_ran_every_row_of_every_system(quick: tuple[dict[str, Any], str]) -> None:
    data, _ = quick
    assert len(data["rounds"]) == 2
    expect = {"aqueduct": {"request 1", "request 32", "service 1", "connect 1-RTT", "connect 0-RTT"},
              "grpc": {"request 1", "request 32"}, "aioquic": {"connect 1-RTT", "connect 0-RTT"}}
    for result in data["rounds"]:
        assert {system: set(rows) for system, rows in result.items()} == expect
    assert list(data["rounds"][0]) == ["aqueduct", "grpc", "aioquic"]  # alternating order
    assert list(data["rounds"][1]) == ["aioquic", "grpc", "aqueduct"]
    assert data["wrong"] == []


def test_the_aqueduct_request_rows_make_one_new_channel_per_call(quick: tuple[dict[str, Any], str]) -> None:
    data, _ = quick
    sizes = data["sizes"]
    for row in _rows(data, "aqueduct"):
        if row["row"].startswith("request"):
            assert row["calls"] == (sizes["calls"] if row["row"] == "request 1" else sizes["calls_32"])
            assert row["far"]["requests"] == row["calls"]
            assert row["far"]["new_channels"] == row["calls"]  # each request's reply sender arrived over the network
            assert row["far"]["service_calls"] == 0


def test_the_service_row_is_typed_service_calls(quick: tuple[dict[str, Any], str]) -> None:
    data, _ = quick
    rows = [row for row in _rows(data, "aqueduct") if row["row"] == "service 1"]
    assert rows
    for row in rows:
        assert row["far"]["service_calls"] == row["calls"] == data["sizes"]["calls"]
        assert row["far"]["requests"] == 0
        assert row["cpu_server"] > 0 and row["cpu_client"] > 0  # both processes' CPU read


def test_the_grpc_rows_are_calls_over_tls_on_one_connection(quick: tuple[dict[str, Any], str]) -> None:
    data, _ = quick
    for row in _rows(data, "grpc"):
        assert row["far"]["calls"] == row["calls"] > 0
        assert row["far"]["tls_calls"] == row["calls"]
        assert row["far_after"]["connections"] == 1


def test_each_connect_is_a_new_connection_and_the_0rtt_rows_were_accepted_as_0rtt(
    quick: tuple[dict[str, Any], str],
) -> None:
    data, _ = quick
    for system in ("aqueduct", "aioquic"):
        for row in _rows(data, system):
            if not row["row"].startswith("connect"):
                continue
            far = row["far"]["row"] if system == "aqueduct" else row["far"]
            assert row["connects"] == data["sizes"]["connects"]
            assert far["connections"] == row["connects"]
            assert far["zero_rtt"] == (row["connects"] if row["row"] == "connect 0-RTT" else 0)


def test_it_prints_which_aqueduct_ran_and_every_target(quick: tuple[dict[str, Any], str]) -> None:
    data, out = quick
    assert data["aqueduct"]["path"] == str(Path(aqueduct.__file__).resolve().parent)
    assert data["aqueduct"]["compiled"] == aqueduct.compiled().active
    assert data["aqueduct"]["path"] in out and aqueduct.compiled().reason in out
    for target in data["targets"]:
        assert target["target"] in out
        assert len(target["ratios"]) == 2


def test_require_wheel_refuses_a_checkout(tmp_path: Path) -> None:
    if not Path(aqueduct.__file__).resolve().is_relative_to(ROOT):
        pytest.skip("aqueduct is not imported from this checkout")
    done = _run("--require-wheel", "--quick", "--workdir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2
    assert "NOT AN INSTALLED WHEEL" in done.stdout and "refusing to run" in done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing started, nothing written


@pytest.mark.timeout(60)
async def test_a_client_waits_for_its_next_round_with_its_event_loop_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between rounds a client waits for the orchestrator's line while the other systems run theirs; its event loop
    must run meanwhile (keep-alives), or its connections idle out on a slow run (the Timeout of a round's first
    request row, decision QUIC-34). The line here is written by a callback of this loop: a wait that blocks the
    loop never sees it (this test then hangs until its timeout)."""
    import importlib.util
    import os

    spec = importlib.util.spec_from_file_location("independent_harness", HARNESS)
    assert spec is not None and spec.loader is not None
    harness = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "independent_harness", harness)
    spec.loader.exec_module(harness)
    read, write = os.pipe()
    with os.fdopen(read) as stdin, os.fdopen(write, "w") as orchestrator:
        monkeypatch.setattr(sys, "stdin", stdin)
        loop = asyncio.get_running_loop()
        def send_round() -> None:
            orchestrator.write("round\n")
            orchestrator.flush()

        loop.call_soon(send_round)
        assert await harness.next_round() is True
        loop.call_soon(orchestrator.close)
        assert await harness.next_round() is False  # (the end of its input: the client ends)

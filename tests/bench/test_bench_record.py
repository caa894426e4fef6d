"""`aqueduct bench --save` keeps a run with machine facts; `--compare A B` prints the ratio table (no timing)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import aqueduct
from aqueduct.bench import record
from aqueduct.cli import main

TINY_TCP = ["bench", "--rounds", "1", "--window", "0.02", "--setups", "1", "--api-channels", "0",
            "--engine-channels", "0", "--only", "tcp", "--quiet"]


def _cell(transport: str, workload: str, median: float, low: float, high: float,
          ratio: float | None = None) -> dict[str, Any]:
    unit = {"msg64": "msgs/s", "rtt_p50": "us"}[workload]
    return {"transport": transport, "workload": workload, "unit": unit, "median": median, "low": low,
            "high": high, "rounds": 3, "ratio": ratio, "reference": "aioquic"}


def _run(cells: list[dict[str, Any]], commit: str = "a" * 40) -> dict[str, Any]:
    return {"format": 1, "environment": {"utc": "2026-11-25T10:00:00Z", "cpus": 2, "cpu_model": "Test CPU",
                                         "loop": "asyncio", "load_average": [1.0, 1.0, 1.0],
                                         "git": {"commit": commit, "dirty": False}},
            "cells": cells}


@pytest.mark.timeout(120)
def test_save_writes_the_run_with_machine_facts_under_benchmarks_results(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*TINY_TCP, "--save"]) == 0
    out = capsys.readouterr().out
    saved = list((tmp_path / "benchmarks" / "results").glob("*.json"))
    assert len(saved) == 1 and f"saved {Path('benchmarks') / 'results' / saved[0].name}" in out
    data = json.loads(saved[0].read_text())
    assert data["format"] == record.FORMAT
    env = data["environment"]
    for fact in ("utc", "cpus", "cpu_model", "memory_bytes", "kernel", "python", "aioquic", "loop",
                 "load_average", "load_average_at_end", "git", "compiled"):
        assert fact in env, fact
    assert env["compiled"]["active"] == aqueduct.compiled().active  # which wire and engine ran (native.py)
    assert env["cpus"] >= 1 and env["memory_bytes"] > 0
    assert {c["transport"] for c in data["cells"]} == {"tcp"}
    # a second save in the same second does not overwrite the first
    assert main([*TINY_TCP, "--save"]) == 0
    assert len(list((tmp_path / "benchmarks" / "results").glob("*.json"))) == 2
    capsys.readouterr()
    # and a saved run compares with itself: every cell '~' and 1.00x
    a = str(saved[0])
    assert main(["bench", "--compare", a, a]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if " tcp " in ln]
    assert lines and all(ln.rstrip().endswith("~") and " 1.00x " in ln for ln in lines)


def test_compare_prints_b_over_a_and_a_verdict_in_each_workloads_direction(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _run([_cell("aqueduct ordered raw", "msg64", 100_000, 90_000, 110_000, 0.5),
              _cell("aqueduct ordered raw", "rtt_p50", 500, 480, 520, 1.5),
              _cell("tcp", "msg64", 300_000, 290_000, 310_000, 1.5),
              _cell("aioquic", "msg64", 200_000, 190_000, 210_000, 1.0)])
    b = _run([_cell("aqueduct ordered raw", "msg64", 200_000, 190_000, 210_000, 1.0),  # faster: better
              _cell("aqueduct ordered raw", "rtt_p50", 600, 590, 610, 1.8),  # slower round trip: worse
              _cell("tcp", "msg64", 305_000, 280_000, 320_000, 1.5),  # ranges overlap: ~
              _cell("aqueduct unordered raw", "msg64", 50_000, 40_000, 60_000, 0.25)], commit="b" * 40)
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a))
    pb.write_text(json.dumps(b))
    assert main(["bench", "--compare", str(pa), str(pb)]) == 0
    text = capsys.readouterr().out
    assert "commit aaaaaaaaaa" in text and "commit bbbbbbbbbb" in text

    rows = {(r.transport, r.workload): r for r in record.rows(a, b)}
    assert rows[("aqueduct ordered raw", "msg64")].change == pytest.approx(2.0)
    assert rows[("aqueduct ordered raw", "msg64")].verdict == "better"
    assert rows[("aqueduct ordered raw", "rtt_p50")].verdict == "worse"
    assert rows[("tcp", "msg64")].verdict == "~"
    assert rows[("aioquic", "msg64")].verdict == "only in A" and rows[("aioquic", "msg64")].change is None
    assert rows[("aqueduct unordered raw", "msg64")].verdict == "only in B"
    assert [r.workload for r in record.rows(a, b)] == ["msg64"] * 4 + ["rtt_p50"]
    faster = next(ln for ln in text.splitlines() if ln.startswith("msg64 (msgs/s)"))
    assert "aqueduct ordered raw" in faster and "2.00x" in faster and "0.50x" in faster and "1.00x" in faster
    assert faster.rstrip().endswith("better")


@pytest.mark.parametrize("content", [None, "not json", json.dumps({"cells": "no"}),
                                     json.dumps({"format": 99, "cells": []})])
def test_compare_refuses_what_is_not_a_saved_run_with_one_line_and_exit_2(
        tmp_path: Path, content: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(_run([])))
    if content is not None:
        bad.write_text(content)
    assert main(["bench", "--compare", str(good), str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("aqueduct bench: ") and "bad.json" in err[0]


@pytest.mark.timeout(240)
def test_connection_rows_measure_both_kinds_and_the_server_held_every_idle_connection(
        capsys: pytest.CaptureFixture[str]) -> None:
    from aqueduct.bench.connections import LOADED_SAMPLES
    from aqueduct.bench.runner import CONNECTION_WORKLOADS

    assert main([*TINY_TCP, "--connections", "--idle", "40", "--connection-window", "0.05", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    got = {(c["transport"], c["workload"]) for c in data["cells"]}
    for transport in ("aqueduct ordered raw", "aioquic"):
        for w in CONNECTION_WORKLOADS:
            assert (transport, w) in got
        # the loaded server's rows are medians of several new connections, not one connect's luck
        assert len(data["samples"][transport]["connect_loaded"]) == LOADED_SAMPLES
    for kind in ("aqueduct", "aioquic"):
        hold = data["connections"][kind]
        assert hold["asked"] == 40 and hold["held"] == 40 - hold["failed"] >= 20
    names = {t["name"] for t in data["targets"]}
    assert {"handshakes/s sequential vs raw aioquic", "server memory per idle connection vs raw aioquic",
            "echo p50 with 40 idle connections vs idle server"} <= names
    for c in data["cells"]:
        if c["workload"] in CONNECTION_WORKLOADS and c["workload"] != "conn_mem":
            assert c["median"] > 0

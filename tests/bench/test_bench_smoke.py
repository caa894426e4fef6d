"""`aqueduct bench` with a tiny budget: the table, JSON and plot have the expected shape (no timing asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aqueduct.bench.runner import TRANSPORTS
from aqueduct.cli import main

TINY = ["bench", "--rounds", "1", "--window", "0.02", "--setups", "1", "--api-channels", "20",
        "--engine-channels", "300", "--cascade", "100", "--engine-messages", "256", "--quiet"]


@pytest.mark.timeout(240)
def test_tiny_run_prints_the_table_and_writes_json_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json, out_png = tmp_path / "bench.json", tmp_path / "bench.png"
    assert main([*TINY, "--json", str(out_json), "--plot", str(out_png)]) == 0
    text = capsys.readouterr().out
    for t in TRANSPORTS:
        assert t.name in text
    assert "targets:" in text and "vs ref" in text
    data = json.loads(out_json.read_text())
    expected = {(t.name, w) for t in TRANSPORTS for w in t.workloads}
    got = {(c["transport"], c["workload"]) for c in data["cells"]}
    assert got == expected
    for c in data["cells"]:
        assert c["low"] <= c["median"] <= c["high"] and c["rounds"] == 1
        if c["transport"] == "aioquic":
            assert c["ratio"] == pytest.approx(1.0)
    assert data["api_memory"]["channels"] == 20
    engine = data["engine"]
    assert engine["cascade_lost"] == 100
    assert [n for n, _ in engine["throughput_vs_channels"]] == [10, 100, 300]
    assert {t["name"] for t in data["targets"]} >= {"ordered 64 B msgs/s vs raw aioquic",
                                                    "unreliable 64 B msgs/s vs raw datagrams"}
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_json_to_stdout_is_one_document(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*TINY, "--only", "tcp", "--api-channels", "0", "--engine-channels", "0", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {c["transport"] for c in data["cells"]} == {"tcp"}
    assert data["engine"] == {} and data["api_memory"] == {}


@pytest.mark.parametrize("bad", [["--only", "no-such-transport"], ["--rounds", "0"], ["--window", "0"]])
def test_bad_options_exit_2_with_one_line_and_start_nothing(bad: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", *bad]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("aqueduct bench: ")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("workload", ["ordered", "channels", "datagrams", "typed"])
def test_cpu_per_message_prints_the_rate_and_both_ends(workload: str) -> None:
    import subprocess
    import sys

    script = Path(__file__).parents[2] / "benchmarks" / "cpu_per_message.py"
    out = subprocess.run([sys.executable, str(script), workload, "--seconds", "0.05"], capture_output=True,
                         text=True, timeout=110, check=True).stdout
    assert "/s; CPU per " in out and "sender " in out and "receiver " in out


def test_each_aqueduct_row_sends_in_the_mode_its_name_says() -> None:
    """(The unordered rows once measured ordered channels: their Transport lacked the mode.)"""
    from aqueduct.core.app import Delivery

    for t in TRANSPORTS:
        if t.family != "aqueduct":
            continue
        named = [m for m in Delivery if f" {m.value} " in f" {t.name} "]
        assert named == [t.mode], t.name


def test_a_measuring_process_that_fails_is_reported_and_the_run_goes_on(monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from aqueduct.bench import runner

    async def fails(*args: object) -> None:
        raise RuntimeError("its measuring process ended 1: ConnectError: no answer")

    monkeypatch.setattr(runner, "_measure_remote", fails)
    assert main([*TINY, "--only", "raw tuned", "--only", "tcp", "--api-channels", "0", "--engine-channels", "0"]) == 0
    out = capsys.readouterr().out
    for name in ("aqueduct ordered raw tuned", "aqueduct unreliable raw tuned"):
        assert f"{name}: round 1 failed: its measuring process ended 1: ConnectError: no answer" in out
    assert " tcp " in out

"""The bench lab (benchmarks/) is outside the installed package: `aqueduct bench --peers` and `--services` load it
from a checkout (aqueduct/bench/lab.py) and say where it is when run elsewhere (issue 35 item 4)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aqueduct.bench import lab
from aqueduct.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("flag", ["--peers", "--services"])
def test_outside_a_checkout_the_lab_rows_exit_2_saying_where_the_lab_is(
        flag: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir("/")  # (not tmp_path: scripts/test.sh puts pytest's base temp inside the clone, a checkout)
    assert main(["bench", flag, "--rounds", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"aqueduct bench: {lab.HOW}"]


def test_from_a_folder_below_the_checkout_the_lab_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO / "docs")
    assert lab.root() == REPO
    assert lab.load("peers").GRPC_TLS == lab.GRPC_TLS
    assert lab.GRPC_TLS in lab.load("peers").BY_NAME


def test_the_installed_package_ships_no_bench_lab() -> None:
    """No peer client or server module under aqueduct/ (import-linter keeps grpc, zmq and nats out of it)."""
    shipped = {p.relative_to(REPO).as_posix() for p in (REPO / "aqueduct").rglob("*.py")}
    assert not any("/peers/" in p or (p.endswith("/services.py") and "/bench/" in p) for p in shipped)


def test_a_lab_process_imports_the_installed_aqueduct_not_the_checkouts(tmp_path: Path) -> None:
    """`benchmarks.command` keeps the current directory (a checkout) off the front of the path and appends the
    checkout: a lab process started from the checkout imports aqueduct from where the interpreter has it."""
    from benchmarks import command

    probe = tmp_path / "probe"
    (probe / "aqueduct").mkdir(parents=True)
    (probe / "aqueduct" / "__init__.py").write_text("raise SystemExit('the current directory was put first')\n")
    code = "import aqueduct, benchmarks; print(aqueduct.__file__); print(benchmarks.__file__)"
    boot = [*command("benchmarks")[:3], f"import sys; sys.path.append({str(REPO)!r}); exec({code!r})"]
    out = subprocess.run(boot, cwd=probe, capture_output=True, text=True, check=True).stdout.split()
    assert not out[0].startswith(str(probe)) and out[1] == str(REPO / "benchmarks" / "__init__.py")
    assert command("benchmarks.peers.serve", "--kind", "zmq")[:2] == [sys.executable, "-P"]

"""A killed driver cannot remove its directory; the next driver to start removes it (and only such ones)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aeron_compat import Aeron, Context
from aeron_compat.client.counters import sweep_stale_driver_dirs


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_sweep_removes_only_directories_of_dead_processes(tmp_path: Path) -> None:
    dead = tmp_path / f"driver-{_dead_pid()}-1"
    live = tmp_path / f"driver-{os.getppid()}-1"
    mine = tmp_path / f"driver-{os.getpid()}-7"
    other = tmp_path / "dev-certs"
    for d in (dead, live, mine, other):
        d.mkdir()
    assert sweep_stale_driver_dirs(tmp_path) == [dead]
    assert not dead.exists() and live.exists() and mine.exists() and other.exists()


def test_a_starting_driver_clears_a_killed_drivers_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AERON_COMPAT_DIR", str(tmp_path))
    stale = tmp_path / f"driver-{_dead_pid()}-1"
    stale.mkdir()
    with Aeron.connect(Context()) as aeron:
        assert not stale.exists()
        assert aeron is not None

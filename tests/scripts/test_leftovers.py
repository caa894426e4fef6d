"""scripts/leftovers.py, which runs the suite in scripts/test.sh: a command that leaves an entry in a watched
directory fails (the entry listed), one that removes what it made passes, and a failing command's status wins."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEFTOVERS = ROOT / "scripts" / "leftovers.py"


def _run(watched: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    inherited = {k: v for k, v in os.environ.items() if k != "AQUEDUCT_LEFTOVERS"}  # (a suite run with =list)
    return subprocess.run([sys.executable, str(LEFTOVERS), "--watch", str(watched), "--settle", "0", "--",
                           sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**inherited, **env})


def test_a_file_left_behind_fails_the_run_and_is_named(tmp_path: Path) -> None:
    (tmp_path / "there-before").mkdir()  # (what was there before the run is no leftover)
    out = _run(tmp_path, f"import pathlib; pathlib.Path({str(tmp_path / 'aqueduct-netloss-x')!r}).mkdir()")
    assert out.returncode == 1
    assert str(tmp_path / "aqueduct-netloss-x") in out.stderr and "there-before" not in out.stderr


def test_a_run_that_cleans_up_passes(tmp_path: Path) -> None:
    code = (f"import pathlib, shutil; p = pathlib.Path({str(tmp_path / 'scratch')!r}); p.mkdir(); "
            "(p / 'key.pem').write_text('k'); shutil.rmtree(p)")
    out = _run(tmp_path, code)
    assert out.returncode == 0 and out.stderr == ""


def test_a_failing_command_keeps_its_status_and_list_mode_only_lists(tmp_path: Path) -> None:
    assert _run(tmp_path, "raise SystemExit(5)").returncode == 5
    out = _run(tmp_path, f"open({str(tmp_path / 'left')!r}, 'w')", AQUEDUCT_LEFTOVERS="list")
    assert out.returncode == 0 and str(tmp_path / "left") in out.stderr


def test_the_suite_runs_under_the_check() -> None:
    test_sh = (ROOT / "scripts" / "test.sh").read_text()
    assert "scripts/leftovers.py --" in test_sh and "-rs" in test_sh and "--basetemp=.pytest-tmp" in test_sh

"""scripts/build-compiled.py, which scripts/setup.sh runs: one line whatever happens, and never a failed setup.

Without a C compiler it says so and that Aqueduct runs on its pure-Python modules, exits 0 and leaves what
was built before alone; `--check` answers whether the compiled modules match the tree (aqueduct/native.py's
manifest check: tests/core/test_native.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from aqueduct.native import stale_reason

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "build-compiled.py"


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env}, timeout=120)


def test_without_a_c_compiler_it_says_why_and_setup_goes_on_pure() -> None:
    before = stale_reason()
    out = _run("--force", CC="/nonexistent/cc")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("\n") == 1, out.stdout
    assert "not built, no C compiler ('/nonexistent/cc' not found" in out.stdout
    assert "pure-Python modules" in out.stdout
    assert stale_reason() == before  # a build already there is kept as it was


def test_check_answers_whether_the_compiled_modules_are_current() -> None:
    out = _run("--check")
    assert out.returncode == (0 if stale_reason() is None else 1)
    assert out.stdout.startswith("compiled modules: ") and out.stdout.count("\n") == 1

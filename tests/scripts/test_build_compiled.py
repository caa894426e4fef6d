"""scripts/build-compiled.py, which scripts/setup.sh runs: one line whatever happens, and never a failed setup.

Without a C compiler it says so and that Aqueduct runs on its pure-Python modules, exits 0 and leaves what
was built before alone; a compiler that fails ends the same way, saying so; `--check` answers whether the compiled
modules match the tree (aqueduct/native.py's manifest check: tests/core/test_native.py). The build is
build_backend/mypyc_build.py, which a wheel build runs too (tests/scripts/test_wheel_build.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aqueduct import native
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


def test_a_failed_compile_is_one_line_and_no_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(ROOT / "build_backend"))
    try:
        import mypyc_build
    finally:
        sys.path.remove(str(ROOT / "build_backend"))
    for path in native.sources():  # a tree of its own: the build writes its log under it
        rel = path.relative_to(ROOT)
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, tmp_path / rel)
    shutil.copy(ROOT / "aqueduct" / "native.py", tmp_path / "aqueduct" / "native.py")

    def failing(root: Path, native: object) -> None:
        os.write(1, b"gcc: noise\nerror: command '/bin/false' failed with exit code 1\n")  # as a compiler's output
        raise SystemExit(1)

    monkeypatch.setattr(mypyc_build, "why_not", lambda: None)
    monkeypatch.setattr(mypyc_build, "_compile", failing)
    result = mypyc_build.build(tmp_path)
    assert result == mypyc_build.Result(False, "build failed (error: command '/bin/false' failed with exit code 1; "
                                               "build/mypyc/build.log)")
    assert not (tmp_path / "aqueduct" / native.DIRNAME).exists()

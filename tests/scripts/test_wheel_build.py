"""A wheel built where no C compiler is (build_backend/aqueduct_build.py): the install succeeds, pure Python, and
says why, in one line of the build's output and in what the installed package reports (`aqueduct --version`
prints `aqueduct.compiled()`: tests/cli/test_version.py; read here without the runtime dependencies, which the
venv does not get).

The project is copied to tmp_path (nothing is written into this tree), its sdist built there, and that sdist
installed into a fresh venv as `pip install` of the sdist does, once with CC naming no compiler and once with no
compiler on PATH (pip's cache off: the wheels built here must not land in the user's cache). Neither build asks
for mypy (the backend adds it only where it will compile), so both stay quick. The compiled wheel itself is
built, installed and checked by scripts/check-wheel.sh (.ci/run). A failed compile (a compiler that is there but
fails) takes the same pure path: tests/scripts/test_build_compiled.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from aqueduct.native import DISTRIBUTION, PURE_ENV

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ("aqueduct", "aeron_compat", "build_backend", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in")


def _copy_project(to: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "_compiled")
    for name in PROJECT:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, to / name, ignore=ignore)
        else:
            shutil.copy(ROOT / name, to / name)
    return to


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("sdist")
    project = _copy_project(tmp / "project")
    out = subprocess.run([sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp / "dist"), str(project)],
                         capture_output=True, text=True, timeout=540, env={**os.environ, "TMPDIR": str(tmp)})
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    (built,) = (tmp / "dist").glob("*.tar.gz")
    return built


@pytest.mark.parametrize("without", ["CC", "PATH"])
def test_without_a_compiler_the_sdist_installs_pure_and_says_why(sdist: Path, tmp_path: Path, without: str) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("CC", PURE_ENV)}  # (the installed one reports its own)
    env["TMPDIR"] = str(tmp_path)
    if without == "CC":
        env["CC"] = "/nonexistent/cc"
        expected = "no C compiler ('/nonexistent/cc' not found"
    else:
        bare = tmp_path / "bin"  # a PATH that has python and nothing else
        bare.mkdir()
        (bare / "python3").symlink_to(sys.executable)
        env["PATH"] = str(bare)
        expected = "no C compiler ('"
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-v",
                              "--no-cache-dir", str(sdist)],
                             capture_output=True, text=True, timeout=540, env=env)  # fmt: skip
    output = install.stdout + install.stderr
    assert install.returncode == 0, output[-3000:]
    lines = [ln.strip() for ln in output.splitlines() if ln.strip().startswith(f"{DISTRIBUTION}: compiled modules")]
    assert len(lines) == 1, lines  # the one line (pip shows a build's output with -v; `python -m build` always)
    assert lines[0].startswith(f"{DISTRIBUTION}: compiled modules: not built, {expected}"), lines[0]
    assert lines[0].endswith("the wheel is pure Python (`aqueduct --version` says why)"), lines[0]
    assert "py3-none-any.whl" in output and "Collecting mypy" not in output  # a pure wheel, and no mypy fetched
    state = subprocess.run([str(python), "-c", "import aqueduct.native as n; print(n.__file__); print(n.compiled())"],
                           capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)  # fmt: skip
    assert state.returncode == 0, state.stderr
    where, said = state.stdout.splitlines()
    assert where.startswith(str(env_dir))
    assert said.startswith(f"pure Python (compiled modules not built when this was installed: {expected}"), said
    assert f"--no-binary {DISTRIBUTION} {DISTRIBUTION}` builds them" in said and "setup.sh" not in said

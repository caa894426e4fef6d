"""scripts/setup.sh's editable install: no setuptools deprecation banner on a first run, and mypy run from
another directory still finds the package (a plain .pth path entry, pyproject's `package-dir`).

A fresh venv gets a copy of the project (so nothing is written into this tree) with --no-deps; the build
backend is fetched as for any first install."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _copy_project(to: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "_compiled")  # (a checkout's own build: not copied)
    for name in ("aqueduct", "aeron_compat", "build_backend"):  # (the build backend: pyproject's backend-path)
        shutil.copytree(ROOT / name, to / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy(ROOT / name, to / name)
    return to


def test_setup_sh_installs_in_the_default_editable_mode() -> None:
    assert "editable_mode" not in (ROOT / "scripts" / "setup.sh").read_text()


def test_first_editable_install_prints_no_banner_and_mypy_finds_the_package(tmp_path: Path) -> None:
    project = _copy_project(tmp_path / "project")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    # this venv's pip installs into the fresh one (what setup.sh's `pip install -e .` does, without the extras)
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                              "-q", "-e", str(project)],
                             capture_output=True, text=True, timeout=540)  # fmt: skip
    output = install.stdout + install.stderr
    assert install.returncode == 0, output[-3000:]
    assert "transitional" not in output and "Warning" not in output, output
    pth = list((env_dir / "lib").glob("python3*/site-packages/__editable__.*.pth"))
    assert len(pth) == 1 and pth[0].read_text().strip() == str(project)
    # an editable install compiles nothing (mypyc is for wheels: build_backend/aqueduct_build.py); a checkout
    # compiles with scripts/build-compiled.py, and AQUEDUCT_PURE=1 runs the pure modules whatever was built
    assert not (project / "aqueduct" / "_compiled").exists() and "mypy" not in output
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "use.py").write_text("import aqueduct\n\nreveal_type(aqueduct.connect)\n")
    mypy = subprocess.run([sys.executable, "-m", "mypy", "--python-executable", str(python), "--no-incremental",
                           "--follow-imports=silent", "use.py"], capture_output=True, text=True, cwd=elsewhere,
                          timeout=300)  # fmt: skip
    assert "Cannot find implementation" not in mypy.stdout, mypy.stdout
    assert "aqueduct.api.endpoints._Connecting" in mypy.stdout, mypy.stdout

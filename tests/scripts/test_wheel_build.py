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

A wheel built twice in one checkout (`pip install .` or `python -m build --wheel`, before and after a pull) holds
the tree as it is at the second build: a module renamed or removed in between is not packed from the first build's
leftovers, the compiled folder carries exactly the files its manifest names, and the checkout keeps no build
directory (decision PERF-52). These builds run in a copy of the project too, without a compiler (quick).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from aqueduct import native
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


def _build_wheel(project: Path, tmp: Path, out: str) -> Path:
    """`python -m build --wheel` in the checkout (what `pip install .` does), with no compiler: the one wheel."""
    env = {k: v for k, v in os.environ.items() if k != PURE_ENV}
    env.update(CC="/nonexistent/cc", TMPDIR=str(tmp))
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp / out), str(project)],
                          capture_output=True, text=True, timeout=540, env=env)  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    (wheel,) = (tmp / out).glob("*.whl")
    return wheel


def _packed(wheel: Path) -> set[str]:
    """The wheel's files of the packages (its .dist-info aside)."""
    with zipfile.ZipFile(wheel) as z:
        return {name for name in z.namelist() if not name.split("/")[0].endswith(".dist-info")}


def _tree(project: Path) -> set[str]:
    """What the wheel must pack of the tree now: every module and py.typed of the two packages."""
    return {str(p.relative_to(project)) for package in ("aqueduct", "aeron_compat")
            for pattern in ("*.py", "py.typed") for p in (project / package).rglob(pattern)
            if "__pycache__" not in p.parts and native.DIRNAME not in p.parts}


def test_a_second_wheel_packs_the_tree_as_it_is_then(tmp_path: Path) -> None:
    project = _copy_project(tmp_path / "project")
    old, new = project / "aqueduct" / "_probe_old.py", project / "aqueduct" / "_probe_new.py"
    old.write_text("X = 1\n")
    first = _build_wheel(project, tmp_path, "first")
    assert _packed(first) == _tree(project) | {f"aqueduct/{native.DIRNAME}/{native.MANIFEST}"}
    old.rename(new)  # (a pull that renames a module)
    (project / "aeron_compat" / "py.typed").unlink()  # (and one that removes a file)
    second = _build_wheel(project, tmp_path, "second")
    packed = _packed(second)
    assert "aqueduct/_probe_old.py" not in packed and "aeron_compat/py.typed" not in packed
    assert packed == _tree(project) | {f"aqueduct/{native.DIRNAME}/{native.MANIFEST}"}
    assert not (project / "build").exists()  # each wheel built in a directory of its own, removed after


def test_a_compiled_wheel_packs_exactly_the_files_its_manifest_names(tmp_path: Path) -> None:
    project = _copy_project(tmp_path / "project")
    package = project / "aqueduct"
    compiled = package / native.DIRNAME
    # A build that is current for the tree (stand-in extension files: the wheel is listed, never imported), and
    # beside it an extension of a module an older build compiled and this one no longer does.
    manifest = native.current_manifest(package)
    manifest["files"] = {m: m.replace(".", "/") + native.ext_suffix() for m in native.MODULES}
    for rel in [*manifest["files"].values(), "aqueduct/core/retired" + native.ext_suffix()]:
        (compiled / rel).parent.mkdir(parents=True, exist_ok=True)
        (compiled / rel).write_bytes(b"")
    (compiled / native.MANIFEST).write_text(json.dumps(manifest))
    assert native.stale_reason(package) is None
    first = _build_wheel(project, tmp_path, "first")
    assert not first.name.endswith("-py3-none-any.whl")  # a compiled wheel: tagged for this interpreter
    prefix = f"aqueduct/{native.DIRNAME}/"
    assert {n for n in _packed(first) if n.startswith(prefix)} == \
        {prefix + native.MANIFEST, *(prefix + rel for rel in manifest["files"].values())}
    # The wire edited since (the build no longer current) and no compiler: a pure wheel, with no extension left.
    (package / "wire" / "varint.py").write_text((package / "wire" / "varint.py").read_text() + "\n")
    second = _build_wheel(project, tmp_path, "second")
    assert second.name.endswith("-py3-none-any.whl")
    assert {n for n in _packed(second) if n.startswith(prefix)} == {prefix + native.MANIFEST}
    with zipfile.ZipFile(second) as z:
        assert "not_built" in json.loads(z.read(prefix + native.MANIFEST))

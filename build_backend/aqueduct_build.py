"""The build backend: setuptools' own, and in every wheel the mypyc-compiled hot modules where a C compiler is.

charset-normalizer's in-tree backend is the model: mypyc on for wheel builds (`pip install .`, `pip install` of
the sdist, `python -m build`), off for the sdist and for an editable install (scripts/setup.sh then runs
scripts/build-compiled.py, and AQUEDUCT_PURE=1 runs the pure modules).

Theory of operation. pyproject.toml names this module ([build-system] backend-path) and its three command
classes ([tool.setuptools] cmdclass). Every hook is setuptools.build_meta's except two:
- `get_requires_for_build_wheel` adds mypy (which ships mypyc) and the runtime dependencies (the compiled adapter
  modules import aioquic) when the tree has no current compiled build and
  this machine has a C compiler and Python's headers (`mypyc_build.why_no_compiler`);
- `build_wheel` first makes aqueduct/_compiled/ current with the one build (build_backend/mypyc_build.py, which
  scripts/build-compiled.py runs too; a current build is kept, not redone), then has setuptools build the
  wheel: `Build` puts setuptools' work in a directory of this wheel's own, `BuildPy` copies
  aqueduct/_compiled/ into it and `BdistWheel` tags it for this interpreter and platform, as its extensions
  are. Where no compiled build can be had (no compiler, no headers, no mypyc, a failed build) it prints one
  line saying why and the wheel is pure Python (py3-none-any), carrying the reason as
  aqueduct/_compiled/manifest.json `{"not_built": why}`, which `aqueduct --version` shows (aqueduct/native.py).
  A missing compiler never fails the install.
The wheel holds the tree as it is at this build: setuptools' build/lib keeps every file an earlier build copied
there and packs them all (a module renamed or removed since the last build in this checkout would ship again),
so each wheel is built in build/wheel.*/, fresh, removed when the wheel is written; of aqueduct/_compiled/ it
gets the manifest and the files the manifest names, nothing else there. The build reads and writes only inside
the tree (aqueduct/_compiled/, build/, the .egg-info setuptools writes), as setuptools does. The decisions and
what was rejected: PERF-42 to PERF-49 and PERF-52 (specs/decisions/performance.md).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mypyc_build
from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (the hooks kept as setuptools has them)
    build_editable,
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build import build
from setuptools.command.build_py import build_py


@dataclass(frozen=True)
class _Wheel:
    compiled: Path | None
    """The tree's aqueduct/_compiled/, current, to pack (None: a pure wheel)."""
    not_built: str
    """Why the wheel is pure ('' when compiled)."""
    build_base: Path
    """This wheel's own build directory (build/wheel.*/: setuptools' lib and bdist), removed when it is written."""


_wheel: _Wheel | None = None
"""What `build_wheel` chose, for the command classes (None: no wheel is being built, e.g. an editable install)."""


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    requires: list[str] = _setuptools.get_requires_for_build_wheel(config_settings)
    root = Path.cwd()
    current = mypyc_build.load_native(root).stale_reason(root / "aqueduct") is None
    if not current and mypyc_build.why_no_compiler() is None:
        requires.extend(mypyc_build.requirements(root))
    return requires


def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    global _wheel
    root = Path.cwd()
    result = mypyc_build.build(root)
    native = mypyc_build.load_native(root)
    (root / "build").mkdir(exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="wheel.", dir=root / "build"))
    if result.compiled:
        _wheel = _Wheel(root / "aqueduct" / native.DIRNAME, "", base)
        line = f"compiled modules: {result.line}: the wheel carries them"
    else:
        _wheel = _Wheel(None, result.line.removeprefix("not built, "), base)  # (native.py's text says "not built")
        line = f"compiled modules: {result.line}: the wheel is pure Python (`aqueduct --version` says why)"
    print(f"{native.DISTRIBUTION}: {line}", file=sys.stderr, flush=True)
    try:
        return str(_setuptools.build_wheel(wheel_directory, config_settings, metadata_directory))
    finally:
        _wheel = None
        shutil.rmtree(base, ignore_errors=True)
        with contextlib.suppress(OSError):  # build/ itself only when empty (a compiled build's log stays in it)
            (root / "build").rmdir()


class Build(build):
    """setuptools' build, in the wheel's own directory when `build_wheel` builds one (its build/lib and bdist)."""

    def initialize_options(self) -> None:
        super().initialize_options()
        if _wheel is not None:
            self.build_base = str(_wheel.build_base)


class BuildPy(build_py):
    """setuptools' build_py, plus aqueduct/_compiled/ in a wheel: the compiled build's manifest and the files it
    names, or why there is none."""

    def run(self) -> None:
        super().run()
        if _wheel is None:
            return
        native = mypyc_build.load_native(Path.cwd())
        target = Path(self.build_lib) / "aqueduct" / native.DIRNAME
        target.mkdir(parents=True)  # (in the wheel's own build directory: nothing of an earlier build there)
        if _wheel.compiled is None:
            (target / native.MANIFEST).write_text(json.dumps({"not_built": _wheel.not_built}) + "\n")
            return
        files = json.loads((_wheel.compiled / native.MANIFEST).read_text())["files"]
        for rel in [native.MANIFEST, *files.values()]:
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(_wheel.compiled / rel, target / rel)


class BdistWheel(bdist_wheel):
    """setuptools' bdist_wheel, tagged for this interpreter and platform when the wheel carries extensions."""

    def finalize_options(self) -> None:
        if _wheel is not None and _wheel.compiled is not None:
            # (setuptools' BinaryDistribution idiom: the tag and the install scheme both ask the distribution)
            self.distribution.has_ext_modules = lambda: True  # type: ignore[method-assign]
        super().finalize_options()

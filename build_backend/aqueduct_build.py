"""The build backend: setuptools' own, and in every wheel the mypyc-compiled hot modules where a C compiler is.

charset-normalizer's in-tree backend is the model: mypyc on for wheel builds (`pip install .`, `pip install` of
the sdist, `python -m build`), off for the sdist and for an editable install (scripts/setup.sh then runs
scripts/build-compiled.py, and AQUEDUCT_PURE=1 runs the pure modules).

Theory of operation. pyproject.toml names this module ([build-system] backend-path) and its two command classes
([tool.setuptools] cmdclass). Every hook is setuptools.build_meta's except two:
- `get_requires_for_build_wheel` adds mypy (which ships mypyc) and the runtime dependencies (the compiled adapter
  modules import aioquic) when the tree has no current compiled build and
  this machine has a C compiler and Python's headers (`mypyc_build.why_no_compiler`);
- `build_wheel` first makes aqueduct/_compiled/ current with the one build (build_backend/mypyc_build.py, which
  scripts/build-compiled.py runs too; a current build is kept, not redone), then has setuptools build the
  wheel: `BuildPy` copies aqueduct/_compiled/ into it and `BdistWheel` tags it for this interpreter and
  platform, as its extensions are. Where no compiled build can be had (no compiler, no headers, no mypyc, a
  failed build) it prints one line saying why and the wheel is pure Python (py3-none-any), carrying the
  reason as aqueduct/_compiled/manifest.json `{"not_built": why}`, which `aqueduct --version` shows
  (aqueduct/native.py). A missing compiler never fails the install.
The build reads and writes only inside the tree (aqueduct/_compiled/, build/), as setuptools does. The
decisions and what was rejected: PERF-42 to PERF-49 (specs/decisions/performance.md).
"""

from __future__ import annotations

import json
import shutil
import sys
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
from setuptools.command.build_py import build_py


@dataclass(frozen=True)
class _Wheel:
    compiled: Path | None
    """The tree's aqueduct/_compiled/, current, to pack (None: a pure wheel)."""
    not_built: str
    """Why the wheel is pure ('' when compiled)."""


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
    if result.compiled:
        _wheel = _Wheel(root / "aqueduct" / native.DIRNAME, "")
        line = f"compiled modules: {result.line}: the wheel carries them"
    else:
        _wheel = _Wheel(None, result.line.removeprefix("not built, "))  # (native.py's text says "not built")
        line = f"compiled modules: {result.line}: the wheel is pure Python (`aqueduct --version` says why)"
    print(f"{native.DISTRIBUTION}: {line}", file=sys.stderr, flush=True)
    try:
        return str(_setuptools.build_wheel(wheel_directory, config_settings, metadata_directory))
    finally:
        _wheel = None


class BuildPy(build_py):
    """setuptools' build_py, plus aqueduct/_compiled/ in a wheel: the compiled build, or why there is none."""

    def run(self) -> None:
        super().run()
        if _wheel is None:
            return
        native = mypyc_build.load_native(Path.cwd())
        target = Path(self.build_lib) / "aqueduct" / native.DIRNAME
        if target.exists():
            shutil.rmtree(target)
        if _wheel.compiled is not None:
            shutil.copytree(_wheel.compiled, target)
        else:
            target.mkdir(parents=True)
            (target / native.MANIFEST).write_text(json.dumps({"not_built": _wheel.not_built}) + "\n")


class BdistWheel(bdist_wheel):
    """setuptools' bdist_wheel, tagged for this interpreter and platform when the wheel carries extensions."""

    def finalize_options(self) -> None:
        if _wheel is not None and _wheel.compiled is not None:
            # (setuptools' BinaryDistribution idiom: the tag and the install scheme both ask the distribution)
            self.distribution.has_ext_modules = lambda: True  # type: ignore[method-assign]
        super().finalize_options()

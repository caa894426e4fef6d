"""Compile the hot modules with mypyc into aqueduct/_compiled/: the one build, for scripts/build-compiled.py (a
checkout's editable install) and for the wheel (build_backend/aqueduct_build.py).

Theory of operation. The modules named in `aqueduct/native.py` (`MODULES`: the wire codec, the sans-I/O
engine and the adapter's writes to aioquic) are compiled by mypyc into one shared library plus one small
extension per module, built in build/mypyc/ (C sources, objects, the build's log) and installed into
aqueduct/_compiled/ beside a manifest (`native.current_manifest`, plus the built files): the SHA-256,
modification time and size of every source the build read, the interpreter's extension suffix and the module
list. aqueduct/native.py loads them at import only while that manifest matches the sources beside it. A build
whose manifest already matches the tree is current and is kept (a wheel built in a checkout set up by
scripts/setup.sh packs that build, compiling nothing again).

`aqueduct/native.py` is loaded here as a file of its own, not through the package: the package's __init__
imports aioquic and the rest of the runtime, which a build environment does not have; native.py imports only
the standard library. Nothing here fails: every outcome is a `Result` whose `line` says what happened, or why
there is no compiled build (no mypyc, no C compiler, no Python headers, a failed build: its log). Nothing
outside the tree is read or written (setuptools' compiler aside).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

MYPYC_REQUIREMENT = "mypy>=1.10"
"""What a build environment installs to compile (mypyc ships in mypy): the dev extra's floor (pyproject.toml)."""


def requirements(root: Path) -> list[str]:
    """What a wheel build environment installs to compile: mypy, and the project's runtime dependencies
    (pyproject.toml's), which the compiled adapter modules import (aioquic's classes, which they subclass and
    whose attributes they read): mypy then sees the same types as in the dev venv, and mypyc compiles the same."""
    import tomllib

    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    return [MYPYC_REQUIREMENT, *project["dependencies"]]


def load_native(root: Path) -> ModuleType:
    """`root`/aqueduct/native.py, loaded alone (standard library only): its module list and manifest code."""
    name = f"_aqueduct_native_{abs(hash(str(root)))}"
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.spec_from_file_location(name, root / "aqueduct" / "native.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (its dataclass looks its module up there)
    spec.loader.exec_module(module)
    return module


def why_not() -> str | None:
    """Why this environment cannot compile (None: it can): the machine first, then the build's packages."""
    why = why_no_compiler()
    if why is not None:
        return why
    try:
        import mypyc  # noqa: F401
        import setuptools  # noqa: F401
    except ImportError as e:
        return f"mypyc or setuptools missing ({e.name}; the dev extra and a wheel build install them)"
    return None


def why_no_compiler() -> str | None:
    """Why this machine has no C toolchain for extensions (None: it has): the compiler setuptools would call
    (CC, else the one Python was built with) and Python's headers."""
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        return f"no C compiler ('{cc}' not found; e.g. apt-get install gcc)"
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").is_file():
        return f"no Python headers ({include}/Python.h missing; e.g. apt-get install python3-dev)"
    return None


@dataclass(frozen=True)
class Result:
    """What a build did: `compiled` (aqueduct/_compiled/ matches the tree now) and in words."""

    compiled: bool
    line: str
    """'built 26 with mypyc', '26 current', 'not built, <why>' or 'build failed (<error>; <log>)'."""


def build(root: Path, force: bool = False) -> Result:
    """Make `root`/aqueduct/_compiled/ current (unless it is already and not `force`); never raises."""
    native = load_native(root)
    package = root / "aqueduct"
    count = len(native.MODULES)
    if not force and native.stale_reason(package) is None:
        return Result(True, f"{count} current, an earlier mypyc build kept")
    why = why_not()
    if why is not None:
        return Result(False, f"not built, {why}")
    log = root / "build" / "mypyc" / "build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as f:  # mypy's and the compiler's output, kept out of the one line
        sys.stdout.flush()
        sys.stderr.flush()
        saved_out, saved_err = os.dup(1), os.dup(2)
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            _compile(root, native)
            failure = None
        except (Exception, SystemExit) as e:  # setuptools reports a compiler failure as SystemExit
            failure = f"{type(e).__name__}: {e}"
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved_out, 1)
            os.dup2(saved_err, 2)
            os.close(saved_out)
            os.close(saved_err)
    if failure is not None:
        first = next((ln for ln in log.read_text(errors="replace").splitlines() if "error:" in ln), failure)
        return Result(False, f"build failed ({first.strip()[:200]}; {log.relative_to(root)})")
    return Result(True, f"built {count} with mypyc into aqueduct/{native.DIRNAME}/")


def _compile(root: Path, native: ModuleType) -> None:
    from mypyc.build import mypycify
    from setuptools import Distribution

    manifest = native.current_manifest(root / "aqueduct")  # the sources as read now, before mypyc reads them
    paths = [str(root / native.source_path(m)) for m in native.MODULES]
    work = root / "build" / "mypyc"
    cwd = os.getcwd()
    os.chdir(root)  # mypy reads pyproject.toml's [tool.mypy] from here
    try:
        # Only the compiled modules' own type errors stop the build: mypy follows the package's imports (the
        # parent __init__ imports the whole API), whose own findings are not the build's business. The wire and
        # the engine import only the standard library, mypy_extensions and each other (sans-I/O: the import
        # contracts); the adapter's compiled modules import aioquic too, which a wheel's build environment
        # installs with the other runtime dependencies (`requirements`), so what mypyc learns of them is the
        # same there as in the dev venv.
        options = ["--follow-imports=silent"]
        extensions = mypycify([*options, *paths], target_dir=str(work / "c"), group_name=native.GROUP,
                              opt_level="3")
        staging = Path(tempfile.mkdtemp(prefix="_compiled.", dir=root / "aqueduct"))
        try:
            dist = Distribution({"name": "aqueduct-compiled", "ext_modules": extensions})
            cmd = dist.get_command_obj("build_ext")
            cmd.build_lib = str(staging)  # type: ignore[attr-defined]
            cmd.build_temp = str(work / "obj")  # type: ignore[attr-defined]
            cmd.inplace = False  # type: ignore[attr-defined]
            cmd.ensure_finalized()
            cmd.run()
            manifest["files"] = {name: str(path.relative_to(staging))
                                 for name, path in _built(staging, native.ext_suffix()).items()}
            (staging / native.MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
            target = root / "aqueduct" / native.DIRNAME
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    finally:
        os.chdir(cwd)


def _built(staging: Path, suffix: str) -> dict[str, Path]:
    """Module name -> its built extension file, for every module and the shared library."""
    out = {}
    for path in staging.rglob(f"*{suffix}"):
        name = ".".join(path.relative_to(staging).parts)[: -len(suffix)]
        out[name] = path
    return out

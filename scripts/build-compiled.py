"""Compile the hot modules with mypyc into aqueduct/_compiled/, the pure-Python sources left as they are.

    python scripts/build-compiled.py [--force] [--check]

scripts/setup.sh runs this after installing the project. It prints one line: that the compiled modules
were built (or were already current), or why they were not (no C compiler, no Python headers, no mypyc,
a failed build) and that Aqueduct runs on its pure-Python modules; it never fails setup. `--check` only
says whether the compiled modules are current (exit 0) or not (exit 1). `--force` rebuilds even when
current.

Theory: the modules named in `aqueduct/native.py` (MODULES: the wire codec and the sans-I/O engine, the
message path's own time) are compiled by mypyc into one shared library plus one small extension per module,
built in build/mypyc/ (C sources, objects) and installed into aqueduct/_compiled/ (git-ignored) beside a
manifest (`native.current_manifest`): the SHA-256, modification time and size of every source the build read,
the interpreter's extension suffix, the module list and the built files.
At import, aqueduct/native.py loads them only when that manifest matches the sources in the tree (any edit
since the build, any other interpreter: the pure modules) and AQUEDUCT_PURE is not set. The .py files stay
the source of truth: they are what mypy, the tests of the pure path and every machine without a compiler
run. Nothing outside the repository tree is read or written (setuptools' compiler aside).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["AQUEDUCT_PURE"] = "1"  # this process imports the package (below) without loading what it replaces

from aqueduct import native  # noqa: E402  (the module list and the manifest format live there)

BUILD = ROOT / "build" / "mypyc"


def _why_not() -> str | None:
    """Why this machine cannot compile (None: it can)."""
    try:
        import mypyc  # noqa: F401
        import setuptools  # noqa: F401
    except ImportError as e:
        return f"mypyc or setuptools missing ({e.name}; the dev extra brings them)"
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]  # (setuptools reads CC too)
    if shutil.which(cc) is None:
        return f"no C compiler ('{cc}' not found; e.g. apt-get install gcc)"
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").is_file():
        return f"no Python headers ({include}/Python.h missing; e.g. apt-get install python3-dev)"
    return None


def _build() -> None:
    from mypyc.build import mypycify
    from setuptools import Distribution

    manifest = native.current_manifest(ROOT / "aqueduct")  # the sources as read now, before mypyc reads them
    paths = [str(ROOT / native.source_path(m)) for m in native.MODULES]
    BUILD.mkdir(parents=True, exist_ok=True)
    cwd = os.getcwd()
    os.chdir(ROOT)  # mypy reads pyproject.toml's [tool.mypy] from here
    try:
        extensions = mypycify(paths, target_dir=str(BUILD / "c"), group_name=native.GROUP, opt_level="3")
        staging = Path(tempfile.mkdtemp(prefix="_compiled.", dir=ROOT / "aqueduct"))
        try:
            dist = Distribution({"name": "aqueduct-compiled", "ext_modules": extensions})
            cmd = dist.get_command_obj("build_ext")
            cmd.build_lib = str(staging)  # type: ignore[attr-defined]
            cmd.build_temp = str(BUILD / "obj")  # type: ignore[attr-defined]
            cmd.inplace = False  # type: ignore[attr-defined]
            cmd.ensure_finalized()
            cmd.run()
            manifest["files"] = {name: str(path.relative_to(staging)) for name, path in _built(staging).items()}
            (staging / native.MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
            target = ROOT / "aqueduct" / native.DIRNAME
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    finally:
        os.chdir(cwd)


def _built(staging: Path) -> dict[str, Path]:
    """Module name -> its built extension file, for every module and the shared library."""
    suffix = native.ext_suffix()
    out = {}
    for path in staging.rglob(f"*{suffix}"):
        name = ".".join(path.relative_to(staging).parts)[: -len(suffix)]
        out[name] = path
    return out


def main() -> int:
    """Build (or check) the compiled modules; one line on stdout says what happened."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when the compiled modules are current")
    parser.add_argument("--check", action="store_true", help="only say whether they are current (exit 1: not)")
    args = parser.parse_args()
    why = native.stale_reason(ROOT / "aqueduct")
    current = why is None
    if args.check:
        print("compiled modules: current" if current else f"compiled modules: {why}")
        return 0 if current else 1
    if current and not args.force:
        print(f"compiled modules: {len(native.MODULES)} current (mypyc; AQUEDUCT_PURE=1 runs the pure-Python ones)")
        return 0
    why = _why_not()
    if why is not None:
        print(f"compiled modules: not built, {why}: Aqueduct runs on its pure-Python modules")
        return 0
    log = BUILD / "build.log"
    BUILD.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as f:
        saved_out, saved_err = os.dup(1), os.dup(2)
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            _build()
            failure = None
        except (Exception, SystemExit) as e:  # setuptools reports a compiler failure as SystemExit
            failure = f"{type(e).__name__}: {e}"
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved_out, 1)
            os.dup2(saved_err, 2)
    if failure is not None:
        print(f"compiled modules: build failed ({failure.splitlines()[0][:200]}; {log.relative_to(ROOT)}): "
              "Aqueduct runs on its pure-Python modules")
        return 0
    print(f"compiled modules: built {len(native.MODULES)} with mypyc into aqueduct/{native.DIRNAME}/ "
          "(AQUEDUCT_PURE=1 runs the pure-Python ones)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

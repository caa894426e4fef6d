"""Compile the hot modules with mypyc into aqueduct/_compiled/, the pure-Python sources left as they are.

    python scripts/build-compiled.py [--force] [--check]

scripts/setup.sh runs this after its editable install (a wheel compiles them itself: build_backend/). It prints
one line: that the compiled modules were built (or were already current), or why they were not (no C compiler,
no Python headers, no mypyc, a failed build) and that Aqueduct runs on its pure-Python modules; it never fails
setup. `--check` only says whether the compiled modules are current (exit 0) or not (exit 1). `--force`
rebuilds even when current.

The build itself, the one a wheel build runs too, is build_backend/mypyc_build.py: the module list and the
manifest are aqueduct/native.py's (`MODULES`, `current_manifest`), which loads the compiled modules at import
only while the manifest matches the sources.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "build_backend"))

import mypyc_build  # noqa: E402  (the one build: build_backend/mypyc_build.py)


def main() -> int:
    """Build (or check) the compiled modules; one line on stdout says what happened."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when the compiled modules are current")
    parser.add_argument("--check", action="store_true", help="only say whether they are current (exit 1: not)")
    args = parser.parse_args()
    if args.check:
        why = mypyc_build.load_native(ROOT).stale_reason(ROOT / "aqueduct")
        print("compiled modules: current" if why is None else f"compiled modules: {why}")
        return 0 if why is None else 1
    result = mypyc_build.build(ROOT, force=args.force)
    if result.compiled:
        print(f"compiled modules: {result.line} (AQUEDUCT_PURE=1 runs the pure-Python ones)")
    else:
        print(f"compiled modules: {result.line}: Aqueduct runs on its pure-Python modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment and install the project
# with everything its tests, demo and Spark pipeline need. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${AQUEDUCT_VENV:-.venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating virtual environment in $VENV" >&2
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
fi
stamp="$VENV/.aqueduct-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ scripts/setup.sh -nt "$stamp" ]; then
  echo "setup: installing aqueduct-quic with its dev and spark extras (first time: a few minutes)" >&2
  # a venv made before the distribution's rename holds it as aqueduct-py (the index's aqueduct-py is another
  # project's): removed first, with the metadata its editable install left in the tree, so one distribution
  # owns the package and the console scripts
  rm -rf aqueduct_py.egg-info
  if "$VENV/bin/python" -m pip show -q aqueduct-py >/dev/null 2>&1; then
    "$VENV/bin/python" -m pip uninstall -q -y aqueduct-py
  fi
  # an editable install that is one plain .pth path entry (pyproject's package-dir), so type checkers (mypy)
  # find the package from any directory (tests/scripts/test_editable_install.py)
  "$VENV/bin/python" -m pip install --quiet -e ".[dev,spark,otel]"
  touch "$stamp"
fi
# The wire codec and the engine compiled with mypyc when a C compiler is there, else why not (one line either
# way; never fails setup): aqueduct/native.py loads them, AQUEDUCT_PURE=1 runs the pure-Python modules instead.
"$VENV/bin/python" scripts/build-compiled.py >&2

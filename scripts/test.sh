#!/usr/bin/env bash
# Set everything up, then run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${AQUEDUCT_VENV:-.venv}"
exec "$VENV/bin/python" -m pytest -q "$@"

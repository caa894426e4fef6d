#!/usr/bin/env bash
# The documentation site. `bash scripts/docs.sh` serves it at http://127.0.0.1:8000 and rebuilds on every
# change; `bash scripts/docs.sh build` writes it to site/ with `mkdocs build --strict`, as CI does.
# Uses the project's virtual environment (scripts/setup.sh installs the docs extra with dev).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${AQUEDUCT_VENV:-.venv}"
if [ "${1:-serve}" = build ]; then
  exec "$VENV/bin/mkdocs" build --strict
fi
exec "$VENV/bin/mkdocs" serve --dev-addr "${DOCS_ADDRESS:-127.0.0.1:8000}"

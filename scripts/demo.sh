#!/usr/bin/env bash
# Set everything up, then run the main job: the live Aqueduct demo on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${AQUEDUCT_VENV:-.venv}"
exec "$VENV/bin/aqueduct" demo "$@"

#!/usr/bin/env bash
# Set everything up, then run the main job: the live Aqueduct demo on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${AQUEDUCT_VENV:-.venv}"
if "$VENV/bin/aqueduct" demo --help >/dev/null 2>&1; then
  exec "$VENV/bin/aqueduct" demo "$@"
fi
# Until the live demo lands: decode a sample datagram with the wire dissector.
exec "$VENV/bin/aqueduct" wire decode ef505fa6600f408e41515545445543540b302e302e302d4146544552030007000200ff

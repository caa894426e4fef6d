#!/usr/bin/env bash
# The wheel as a user gets it (.ci/run runs this): build the sdist and from it the wheel, which compiles the wire
# and the engine with mypyc (build_backend/), install the wheel into a fresh venv outside the checkout, and there
# run `aqueduct --version` (it must say compiled), a real loopback connection and message (scripts/wheel_smoke.py)
# and the differential oracle (tests/core/native_oracle.py: the same digest of the engine's and the wire's
# behaviour compiled and with AQUEDUCT_PURE=1, the compiled modules loaded from the venv). Everything, the build's
# own temporary files too, stays under one temporary directory, removed on exit; the checkout gets only the
# .egg-info setuptools writes there (the wheel is built from the sdist, unpacked in the temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
VENV="${AQUEDUCT_VENV:-.venv}"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/aqueduct-wheel.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
export TMPDIR="$TMP"
if ! "$VENV/bin/python" -m build --outdir "$TMP/dist" . >"$TMP/build.log" 2>&1; then
  tail -40 "$TMP/build.log" >&2
  echo "check-wheel: python -m build failed" >&2
  exit 1
fi
grep -h "^aqueduct-quic: " "$TMP/build.log" | sed 's/^/check-wheel: /' >&2  # the backend's one line
wheel="$(ls "$TMP"/dist/*.whl)"
echo "check-wheel: built $(basename "$TMP"/dist/*.tar.gz) and $(basename "$wheel")" >&2
"$VENV/bin/python" -m venv "$TMP/venv"
"$TMP/venv/bin/python" -m pip install --quiet "$wheel"
cd "$TMP"  # outside the checkout: nothing of it on sys.path
version="$("$TMP/venv/bin/aqueduct" --version)"
echo "check-wheel: $version" >&2
case "$version" in
  *", compiled ("*) ;;
  *) echo "check-wheel: the installed wheel runs pure Python" >&2; exit 1 ;;
esac
"$TMP/venv/bin/python" "$ROOT/scripts/wheel_smoke.py" >&2
AQUEDUCT_PURE=1 "$TMP/venv/bin/python" "$ROOT/scripts/wheel_smoke.py" >&2
"$TMP/venv/bin/python" "$ROOT/tests/core/native_oracle.py" 24 >"$TMP/compiled.json"
AQUEDUCT_PURE=1 "$TMP/venv/bin/python" "$ROOT/tests/core/native_oracle.py" 24 >"$TMP/pure.json"
"$TMP/venv/bin/python" - "$TMP" <<'PY' >&2
import json, sys
from pathlib import Path
tmp = Path(sys.argv[1])
built, pure = (json.loads((tmp / f"{mode}.json").read_text()) for mode in ("compiled", "pure"))
assert built["active"] and not pure["active"], (built["reason"], pure["reason"])
assert all(f.startswith(str(tmp / "venv")) and not f.endswith(".py") for f in built["files"].values()), built["files"]
assert built["digest"] == pure["digest"], f"compiled {built['digest']} != pure {pure['digest']}"
print(f"check-wheel: oracle digest {built['digest'][:16]}, the same compiled and pure (24 driver seeds, every wire vector)")
PY

#!/usr/bin/env bash
# Build OpenWeaver's Stream example server and client (patched copies, scripts/openweaver_patch.py)
# into a cache directory keyed by a hash of the sources and of these scripts; print that directory.
# Installs the Debian build dependencies first when missing. Sources: $OPENWEAVER_SRC, else
# ../shared/anchors/openweaver-stream beside the clone, else /work/shared/anchors/openweaver-stream.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC=${OPENWEAVER_SRC:-}
for cand in "$SRC" "$ROOT/../shared/anchors/openweaver-stream" /work/shared/anchors/openweaver-stream; do
  if [ -n "$cand" ] && [ -f "$cand/stream/examples/server.cpp" ]; then SRC=$(cd "$cand" && pwd); break; fi
done
[ -f "$SRC/stream/examples/server.cpp" ] || { echo "build_openweaver: OpenWeaver sources not found" >&2; exit 2; }

PKGS="libsodium-dev libuv1-dev libspdlog-dev libfmt-dev libboost-filesystem-dev libabsl-dev g++"
missing=""
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "build_openweaver: apt-get install$missing" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >&2
fi

KEY=$( (cd "$SRC" && find core asyncio uvpp stream simulator -type f \( -name '*.hpp' -o -name '*.ipp' -o -name '*.cpp' -o -name '*.h' \) | LC_ALL=C sort | xargs sha256sum; \
        sha256sum "$ROOT/scripts/openweaver_patch.py" "$ROOT/scripts/build_openweaver.sh"; g++ --version | head -1) | sha256sum | cut -c1-16)
OUT=${OPENWEAVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aqueduct-openweaver}/$KEY
if [ -x "$OUT/ow_server" ] && [ -x "$OUT/ow_client" ]; then echo "$OUT"; exit 0; fi

mkdir -p "$OUT.tmp"
python3 "$ROOT/scripts/openweaver_patch.py" "$SRC" "$OUT.tmp"
FLAGS="-std=c++20 -O2 -w -DSPDLOG_ACTIVE_LEVEL=SPDLOG_LEVEL_INFO -DSPDLOG_FMT_EXTERNAL -I$OUT.tmp/include
  -I$SRC/core/include -I$SRC/asyncio/include -I$SRC/uvpp/include -I$SRC/stream/include -I$SRC/simulator/include"
LIBS="-lsodium -luv -lspdlog -lfmt -lboost_filesystem -labsl_hash -labsl_raw_hash_set -labsl_city -labsl_low_level_hash"
start=$(date +%s)
objs=()
for f in "$SRC"/core/src/*.cpp "$SRC"/core/src/messages/*.cpp "$SRC"/simulator/src/core/*.cpp; do
  o="$OUT.tmp/$(basename "$f" .cpp).o"; objs+=("$o")
  g++ $FLAGS -c "$f" -o "$o" &
done
wait
g++ $FLAGS "$OUT.tmp/ow_server.cpp" "${objs[@]}" -o "$OUT.tmp/ow_server" $LIBS &
g++ $FLAGS "$OUT.tmp/ow_client.cpp" "${objs[@]}" -o "$OUT.tmp/ow_client" $LIBS &
wait
[ -x "$OUT.tmp/ow_server" ] && [ -x "$OUT.tmp/ow_client" ] || { echo "build_openweaver: build failed" >&2; exit 1; }
echo "build_openweaver: built in $(( $(date +%s) - start )) s" >&2
rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
echo "$OUT"

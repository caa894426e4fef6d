#!/usr/bin/env bash
# Build OpenWeaver's Stream example server and client from the vendored sources (third_party/openweaver)
# with its patches applied (third_party/openweaver/patches, `patch -p1` on a copy) into a cache directory
# keyed by a hash of the sources, the patches, this script and the compiler; print that directory. The cache is
# the clone's build/openweaver (ignored by git; OPENWEAVER_CACHE overrides it): nothing is written outside the clone.
# Installs nothing: without the build packages it exits 3 naming them and `scripts/setup-system.sh openweaver`.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC="$ROOT/third_party/openweaver"

if ! why=$(bash "$ROOT/scripts/setup-system.sh" --check openweaver); then echo "build_openweaver: $why" >&2; exit 3; fi

KEY=$( (cd "$SRC" && find . -type f | LC_ALL=C sort | xargs sha256sum; \
        sha256sum "$ROOT/scripts/build_openweaver.sh"; g++ --version | head -1) | sha256sum | cut -c1-16)
OUT=${OPENWEAVER_CACHE:-$ROOT/build/openweaver}/$KEY
if [ -x "$OUT/ow_server" ] && [ -x "$OUT/ow_client" ]; then echo "$OUT"; exit 0; fi

mkdir -p "$(dirname "$OUT")"
exec 9>"$OUT.lock"  # concurrent test workers build once; the others wait and reuse it
flock 9
if [ -x "$OUT/ow_server" ] && [ -x "$OUT/ow_client" ]; then echo "$OUT"; exit 0; fi

rm -rf "$OUT.tmp"
mkdir -p "$OUT.tmp"
cp -r "$SRC" "$OUT.tmp/src"
for p in "$SRC"/patches/*.patch; do
  patch -p1 --quiet --no-backup-if-mismatch -d "$OUT.tmp/src" < "$p" \
    || { echo "build_openweaver: $(basename "$p") does not apply" >&2; exit 1; }
done
S="$OUT.tmp/src"
FLAGS="-std=c++20 -O2 -w -DSPDLOG_ACTIVE_LEVEL=SPDLOG_LEVEL_INFO -DSPDLOG_FMT_EXTERNAL
  -I$S/core/include -I$S/asyncio/include -I$S/uvpp/include -I$S/stream/include -I$S/simulator/include"
LIBS="-lsodium -luv -lspdlog -lfmt -lboost_filesystem -labsl_hash -labsl_raw_hash_set -labsl_city -labsl_low_level_hash"
start=$(date +%s)
objs=()
for f in "$S"/core/src/*.cpp "$S"/core/src/messages/*.cpp "$S"/simulator/src/core/*.cpp; do
  o="$OUT.tmp/$(basename "$f" .cpp).o"; objs+=("$o")
  g++ $FLAGS -c "$f" -o "$o" &
done
wait
g++ $FLAGS "$S/stream/examples/server.cpp" "${objs[@]}" -o "$OUT.tmp/ow_server" $LIBS &
g++ $FLAGS "$S/stream/examples/client.cpp" "${objs[@]}" -o "$OUT.tmp/ow_client" $LIBS &
wait
[ -x "$OUT.tmp/ow_server" ] && [ -x "$OUT.tmp/ow_client" ] || { echo "build_openweaver: build failed" >&2; exit 1; }
echo "build_openweaver: built in $(( $(date +%s) - start )) s" >&2
rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
echo "$OUT"

#!/usr/bin/env bash
# Make a headless Chromium available (Debian's package) for the HTML report's browser test; print its path.
# Cached: does nothing when one is installed already. Needs root (CI runs as root) and the Debian mirrors.
# Serialised with a lock, so concurrent test runs do not run apt-get twice.
set -euo pipefail
find_chromium() { command -v chromium || command -v chromium-browser || true; }
found="$(find_chromium)"
if [ -z "$found" ]; then
  exec 9>/tmp/aqueduct-chromium.lock
  flock 9
  found="$(find_chromium)"
  if [ -z "$found" ]; then
    echo "chromium.sh: installing chromium from Debian's packages (first time only)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
    found="$(find_chromium)"
  fi
fi
[ -n "$found" ] || { echo "chromium.sh: no chromium after install" >&2; exit 1; }
echo "$found"

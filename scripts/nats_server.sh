#!/usr/bin/env bash
# Make nats-server available (Debian's package) for the NATS rows of `aqueduct bench --peers`; print its path.
# Cached: does nothing when one is installed already. Needs root (CI runs as root) and the Debian mirrors.
# Serialised with a lock, so concurrent test runs do not run apt-get twice. Installs the program only: the
# bench starts its own server on a free loopback port (aqueduct/bench/peers/nats.py), none runs as a service.
set -euo pipefail
find_nats() { command -v nats-server || { [ -x /usr/sbin/nats-server ] && echo /usr/sbin/nats-server; } || true; }
found="$(find_nats)"
if [ -z "$found" ]; then
  exec 9>/tmp/aqueduct-nats-server.lock
  flock 9
  found="$(find_nats)"
  if [ -z "$found" ]; then
    echo "nats_server.sh: installing nats-server from Debian's packages (first time only)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends nats-server >&2
    found="$(find_nats)"
  fi
fi
[ -n "$found" ] || { echo "nats_server.sh: no nats-server after install" >&2; exit 1; }
echo "$found"

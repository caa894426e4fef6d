#!/usr/bin/env bash
# Make `ip` (iproute2) and `iptables` available for the kernel-loss curves of `aqueduct bench --loss-curves`
# (aqueduct/bench/netloss.py) and their test. Cached: does nothing when both are installed. Needs root (CI
# runs as root) and the Debian mirrors. Serialised with a lock, so concurrent runs do not run apt-get twice.
set -euo pipefail
have() { command -v ip >/dev/null && command -v iptables >/dev/null; }
if ! have; then
  exec 9>/tmp/aqueduct-netns-tools.lock
  flock 9
  if ! have; then
    echo "netns_tools.sh: installing iproute2 and iptables from Debian's packages (first time only)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends iproute2 iptables >&2
  fi
fi
have || { echo "netns_tools.sh: no ip/iptables after install" >&2; exit 1; }
command -v iptables

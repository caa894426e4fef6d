#!/usr/bin/env bash
# Install what the full test suite needs beyond the Python venv (scripts/setup.sh): Debian packages, and the
# separate Python 3.12 venv of the real-Aeron peer. Idempotent: a piece already present is left alone, and a
# run with nothing to do prints one line. apt needs root (or sudo).
# Before it installs anything it prints every Debian package it will install and why: the packages each piece
# names, then the ones apt pulls in as their dependencies (from `apt-get -s`, the simulated install), so nothing
# is installed unnamed. apt's own output (and debconf's notes) is kept back unless the install fails. It writes
# nothing outside the clone but what apt and the pyaeron venv install (its lock is this script file itself).
#
#   scripts/setup-system.sh [PIECE...]          install the named pieces (default: all)
#   scripts/setup-system.sh --check PIECE       exit 0 and print what was found if PIECE is present; else
#                                               exit 1 and print why, with the command that enables it
#
# Pieces (each: what it is for):
#   chromium    Debian's chromium + fonts: the HTML report's browser test (tests/spark/test_html_report.py)
#   openweaver  g++, patch and the C++ libraries of the vendored OpenWeaver (third_party/openweaver), built
#               by scripts/build_openweaver.sh for the interop tests (tests/stream/test_openweaver_interop.py)
#   netns       iproute2 + iptables: kernel-loss curves in a network namespace (tests/bench/test_kernel_loss.py);
#               those tests also need root
#   java        a JDK (Java 17+) for Spark, which the analysis pipeline and its tests run (tests/spark/)
#   aeron       .venv-aeron: Python 3.12+ with pyaeron, the real Aeron C driver for interop
#               (tests/aeron_native/test_interop.py; aeron_compat/native/interop.py makes it)
#   nats        Debian's nats-server, the program only (no service is started): the NATS rows of
#               `aqueduct bench --peers` start their own on a free loopback port (tests/bench/test_peers.py)
#   node        the TypeScript client's npm packages in a repo-local cache (scripts/setup-node.sh; Node.js 20
#               and npm come with the machine): its tests (tests/typescript/) and the browser bundle
# The tests call `--check` (tests/system_deps.py): a missing piece skips them with this script's reason,
# and fails them under AQUEDUCT_REQUIRE_SYSTEM=1 (.ci/run).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ALL="chromium openweaver netns java aeron nats node"

packages() {
  case "$1" in
    chromium) echo "chromium fonts-dejavu-core" ;;
    openweaver) echo "g++ patch libsodium-dev libuv1-dev libspdlog-dev libfmt-dev libboost-filesystem-dev libabsl-dev" ;;
    netns) echo "iproute2 iptables" ;;
    java) echo "openjdk-17-jre-headless" ;;
    aeron) echo "" ;;
    nats) echo "nats-server" ;;
    node) echo "" ;;
    *) echo "setup-system: unknown piece '$1' (pieces: $ALL)" >&2; exit 2 ;;
  esac
}

why() {
  case "$1" in
    chromium) echo "headless browser for the HTML report test" ;;
    openweaver) echo "to build the OpenWeaver C++ peers of the Marlin Stream interop tests" ;;
    netns) echo "network namespaces with kernel packet loss for the loss-curve tests" ;;
    java) echo "Spark needs Java 17+" ;;
    aeron) echo "pyaeron (the real Aeron C driver) for the Aeron interop tests" ;;
    nats) echo "a NATS server beside Aqueduct in the benchmark's peer rows" ;;
    node) echo "the TypeScript client's packages for its tests and the browser bundle" ;;
  esac
}

missing_packages() {
  local p out=""
  for p in $(packages "$1"); do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || out="$out $p"
  done
  echo "${out# }"
}

java_major() {  # the major version of the java Spark would use (JAVA_HOME first, as aqueduct/spark/session.py)
  local java="${JAVA_HOME:+$JAVA_HOME/bin/}java" v
  v=$("$java" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\)\(\.\([0-9]*\)\)\{0,1\}.*/\1 \3/p' | head -1) || true
  set -- $v
  if [ "${1:-0}" = 1 ]; then echo "${2:-0}"; else echo "${1:-0}"; fi
}

# check PIECE: print what is there (exit 0) or why not and how to enable it (exit 1)
check() {
  local piece=$1 missing enable="sudo scripts/setup-system.sh $1"
  [ "$(id -u)" = 0 ] && enable="scripts/setup-system.sh $1"
  case "$piece" in
    aeron)
      if out=$(python3 "$ROOT/aeron_compat/native/interop.py" --check); then echo "$out"; return 0; fi
      echo "$out"; return 1 ;;
    node) bash "$ROOT/scripts/setup-node.sh" --check; return ;;
    java)
      if [ "$(java_major)" -ge 17 ]; then echo "Java $(java_major)"; return 0; fi
      missing=$(missing_packages java) ;;
    *) missing=$(missing_packages "$piece") ;;
  esac
  if [ -n "$missing" ]; then
    echo "$piece missing: Debian packages $missing ($(why "$piece")); enable with: $enable"; return 1
  fi
  if [ "$piece" = java ]; then  # the package is there but JAVA_HOME/PATH point elsewhere
    echo "java: openjdk-17 is installed but ${JAVA_HOME:+JAVA_HOME=$JAVA_HOME gives }Java $(java_major); unset JAVA_HOME or point it at Java 17+"
    return 1
  fi
  if [ "$piece" = netns ] && [ "$(id -u)" != 0 ]; then
    echo "netns needs root (network namespaces and iptables); enable with: run the tests as root"; return 1
  fi
  case "$piece" in
    chromium) command -v chromium || command -v chromium-browser \
      || { echo "chromium: the packages are installed but no chromium command is on PATH"; return 1; } ;;
    nats) command -v nats-server || { [ -x /usr/sbin/nats-server ] && echo /usr/sbin/nats-server; } \
      || { echo "nats: the package is installed but no nats-server program was found"; return 1; } ;;
    *) packages "$piece" ;;
  esac
}

if [ "${1:-}" = --check ]; then
  [ $# = 2 ] || { echo "usage: setup-system.sh --check PIECE (pieces: $ALL)" >&2; exit 2; }
  packages "$2" >/dev/null
  check "$2"
  exit
fi

pieces=${*:-$ALL}
for piece in $pieces; do packages "$piece" >/dev/null; done
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if [ -t 0 ]; then SUDO="sudo"; else SUDO="sudo -n"; fi  # no terminal (scripts/test.sh in CI): never prompt
fi

exec 9<"$0"  # concurrent runs do not run apt-get twice (the lock is this script: no file left in /tmp)
flock 9
todo="" present=""
for piece in $pieces; do
  if check "$piece" >/dev/null; then present="$present $piece"; else todo="$todo $piece"; fi
done
if [ -z "$todo" ]; then
  echo "setup-system: present:$present (nothing to install)"
  exit 0
fi
APT="env DEBIAN_FRONTEND=noninteractive DEBCONF_NONINTERACTIVE_SEEN=true apt-get -o Dpkg::Use-Pty=0"
quietly() {  # run a command with its output kept back; on failure show it and stop
  local out
  if ! out=$("$@" 2>&1); then echo "$out" >&2; echo "setup-system: failed: $*" >&2; exit 1; fi
}

# Name everything first: each piece's packages and why, then what apt adds as their dependencies.
named=""
for piece in $todo; do
  missing=$(missing_packages "$piece")
  if [ -n "$missing" ]; then
    echo "setup-system: $piece: apt-get install $missing ($(why "$piece"))"
    named="$named $missing"
  fi
done
if [ -n "$named" ]; then
  if [ -n "$SUDO" ] && ! $SUDO true 2>/dev/null; then
    echo "setup-system: not root and no usable sudo: cannot install$named (run: sudo scripts/setup-system.sh$todo)" >&2
    exit 1
  fi
  quietly $SUDO $APT update -qq  # (the package lists only: nothing is installed)
  plan=$($SUDO $APT install -s --no-install-recommends $named 2>&1) \
    || { echo "$plan" >&2; echo "setup-system: apt cannot install$named" >&2; exit 1; }
  deps=""
  for p in $(echo "$plan" | sed -n 's/^Inst \([^ ]*\).*/\1/p'); do
    case " $named " in *" $p "*) ;; *) deps="$deps $p" ;; esac
  done
  if [ -n "$deps" ]; then
    echo "setup-system: apt adds $(echo $deps | wc -w) packages the above depend on (no recommends):$deps"
  fi
  quietly $SUDO $APT install -y -qq --no-install-recommends $named
fi
for piece in $todo; do
  if [ "$piece" = node ]; then
    bash "$ROOT/scripts/setup-node.sh"
  fi
  if [ "$piece" = aeron ]; then
    echo "setup-system: aeron: creating .venv-aeron with pyaeron ($(why aeron))"
    if [ -n "${SUDO_USER:-}" ] && [ "$(id -u)" = 0 ]; then  # under sudo: the venv belongs to the user
      sudo -u "$SUDO_USER" python3 "$ROOT/aeron_compat/native/interop.py"
    else
      python3 "$ROOT/aeron_compat/native/interop.py"
    fi
  fi
  msg=$(check "$piece") || { echo "setup-system: $piece still missing after install: $msg" >&2; exit 1; }
done
echo "setup-system: done:$todo${present:+ (already present:$present)}"

#!/usr/bin/env bash
# Set everything up, then run the whole test suite. Extra arguments go to pytest.
# scripts/setup-system.sh installs the system packages the full suite needs (Chromium, the OpenWeaver build
# packages, iproute2/iptables, a JDK, the pyaeron venv); it says what it installs, and one line when all is
# there. Without them (not root, no sudo) the tests that need them skip, naming the command that enables them.
# The suite runs on pytest-xdist workers, one more than the machine's cores (at most 8; AQUEDUCT_TEST_WORKERS
# sets the count), a test file at a time (--dist loadfile): a file's tests share its module fixtures and run one
# after another, and each worker starts its session fixtures (Spark) once. The extra worker fills the time the
# others wait on JVMs, subprocesses and sockets (decision PROJ-10).
# The longest files start first, as the runs before measured them (kept in .pytest_cache), and files sharing
# an expensive session fixture run on one worker (tests/scheduling.py), so the workers end together.
# The summary gives each skip's reason (-rs). Pytest's temporary directories are the clone's .pytest-tmp (kept
# for a look after a failure, as pytest keeps its own), and scripts/leftovers.py runs the suite: whatever a test
# or bench leaves outside the clone (in /tmp, $TMPDIR, the home directory or its cache) is listed and fails the
# run (AQUEDUCT_LEFTOVERS=list only lists them, for a machine shared with other work).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-system.sh || echo "test.sh: system pieces missing (above): the tests that need them will skip" >&2
VENV="${AQUEDUCT_VENV:-.venv}"
CORES=$(nproc 2>/dev/null || echo 2)
WORKERS="${AQUEDUCT_TEST_WORKERS:-$(( CORES + 1 < 8 ? CORES + 1 : 8 ))}"
exec "$VENV/bin/python" scripts/leftovers.py -- \
  "$VENV/bin/python" -m pytest -q -rs -n "$WORKERS" --dist loadfile --basetemp=.pytest-tmp "$@"

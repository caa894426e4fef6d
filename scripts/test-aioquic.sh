#!/usr/bin/env bash
# Run the QUIC adapter's tests against another aioquic release than the one pyproject.toml pins: by default the
# newest on the package index (CI: does the next release break the door, aqueduct/quic/introspect.py and
# aqueduct/quic/aioquic_*.py?), or the version given (`scripts/test-aioquic.sh 1.2.0`: the pin's lower bound).
#
# aioquic (and the versions of its dependencies it asks for) is installed with `pip install --target` into
# .cache/aioquic/VERSION/, once per version, and put ahead of the project's venv on PYTHONPATH; everything else is
# the venv's (scripts/setup.sh makes it). The tests: tests/quic (the adapter), tests/api/test_e2e_*.py (whole
# connections) and tests/architecture/test_aioquic_stays_in_quic.py (the door, read against that aioquic's
# source). Cost: nothing when the newest is the venv's own (the suite tested it); else the first run of a release
# downloads and unpacks ~25 MB (aioquic and the dependencies it names), and every run the tests (~2 minutes of CPU, ~1 minute on 2 workers). Extra
# arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${AQUEDUCT_VENV:-.venv}"
PY="$VENV/bin/python"
VERSION="${1:-newest}"
[ $# -gt 0 ] && shift
if [ "$VERSION" = newest ]; then
  # `pip index versions` prints "aioquic (X.Y.Z)" first: the newest release the index has
  VERSION=$("$PY" -m pip index versions aioquic 2>/dev/null | sed -n 's/^aioquic (\(.*\))$/\1/p')
  [ -n "$VERSION" ] || { echo "test-aioquic: the package index named no aioquic release" >&2; exit 1; }
  INSTALLED=$("$PY" -c 'import aioquic; print(aioquic.__version__)')
  if [ "$VERSION" = "$INSTALLED" ]; then
    echo "test-aioquic: the newest aioquic, $VERSION, is the venv's: the suite tested it"
    exit 0
  fi
fi
TARGET=".cache/aioquic/$VERSION"
if [ ! -f "$TARGET/.installed" ]; then
  rm -rf "$TARGET"
  "$PY" -m pip install --quiet --disable-pip-version-check --target "$TARGET" "aioquic==$VERSION"
  touch "$TARGET/.installed"
fi
export PYTHONPATH="$PWD/$TARGET${PYTHONPATH:+:$PYTHONPATH}"
FOUND=$("$PY" -c 'import aioquic; print(aioquic.__version__)')
[ "$FOUND" = "$VERSION" ] || { echo "test-aioquic: asked for aioquic $VERSION, imported $FOUND" >&2; exit 1; }
echo "test-aioquic: the adapter's tests on aioquic $VERSION (pinned: $(grep -o '"aioquic[<>=!~][^"]*"' pyproject.toml | head -1))"
CORES=$(nproc 2>/dev/null || echo 2)
exec "$PY" -m pytest -q -n "${AQUEDUCT_TEST_WORKERS:-$CORES}" tests/quic tests/api/test_e2e_*.py \
  tests/architecture/test_aioquic_stays_in_quic.py "$@"

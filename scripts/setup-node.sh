#!/usr/bin/env bash
# The TypeScript client's npm packages (clients/typescript), installed from its lockfile into a repo-local cache,
# so that later installs (`npm ci --offline`, tests/typescript/test_package.py, the browser test's bundle) need no
# network. Idempotent: with the cache and node_modules current it does nothing.
#
#   scripts/setup-node.sh           npm ci --cache clients/typescript/.npm-cache (online the first time); installs
#                                   the lockfile's packages: cborg (the CBOR codec, a runtime dependency) and the
#                                   build and test tools (typescript, esbuild for the browser bundle, @types/node,
#                                   typedoc for the API reference, json-schema-to-typescript for service types)
#   scripts/setup-node.sh --check   exit 0 (printing node's version) if Node.js >= 20 and npm are there and the
#                                   cache is filled; else exit 1 saying why and how to enable it
# Node.js and npm themselves come with the machine (this kind's image); scripts/setup-system.sh's `node` piece
# runs this script.
set -euo pipefail
PKG="$(cd "$(dirname "$0")/.." && pwd)/clients/typescript"
CACHE="$PKG/.npm-cache"
stamp="$PKG/node_modules/.aqueduct-installed"

check() {
  command -v node >/dev/null && command -v npm >/dev/null \
    || { echo "node missing: Node.js 20+ and npm are not on PATH (they come with the machine image)"; return 1; }
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  [ "$major" -ge 20 ] || { echo "node $(node --version) is older than 20"; return 1; }
  [ -d "$CACHE/_cacache" ] || { echo "node: the npm cache is empty; enable with: bash scripts/setup-node.sh"; return 1; }
  echo "node $(node --version), npm $(npm --version), cache $CACHE"
}

if [ "${1:-}" = --check ]; then
  check
  exit
fi
if [ -f "$stamp" ] && [ "$stamp" -nt "$PKG/package-lock.json" ] && [ -d "$CACHE/_cacache" ]; then
  echo "setup-node: clients/typescript packages present (nothing to install)"
  exit 0
fi
echo "setup-node: npm ci in clients/typescript, cache $CACHE (the TypeScript client's codec and build tools)"
cd "$PKG"
npm ci --cache "$CACHE" --prefer-offline --no-audit --no-fund --loglevel=error
touch "$stamp"

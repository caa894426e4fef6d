"""The TypeScript client's npm packages for tests: `installed()` runs `npm ci --offline` from the cache that
scripts/setup-node.sh fills (the system piece `node`), once per lockfile, under a file lock so that concurrent test
workers (this package's test, the browser test that builds the bundle) never install into the same folder at
once. Nothing is fetched from the network here: a cache that lacks a package fails the install."""

from __future__ import annotations

import fcntl
import subprocess
from pathlib import Path

from tests.system_deps import requires_system

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
CACHE = PACKAGE / ".npm-cache"
_STAMP = PACKAGE / "node_modules" / ".aqueduct-installed"


def npm(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run `npm ARGS` in the package folder, output captured."""
    return subprocess.run(["npm", *args], cwd=PACKAGE, capture_output=True, text=True, timeout=timeout)


def installed() -> Path:
    """The package folder with node_modules installed from the lockfile and the offline cache (skips, or fails
    under AQUEDUCT_REQUIRE_SYSTEM=1, when the `node` piece is missing)."""
    requires_system("node")
    with open(PACKAGE / ".npm-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (_STAMP.exists() and _STAMP.stat().st_mtime >= (PACKAGE / "package-lock.json").stat().st_mtime):
            out = npm("ci", "--offline", "--cache", str(CACHE), "--no-audit", "--no-fund")
            assert out.returncode == 0, f"npm ci --offline failed:\n{out.stdout}\n{out.stderr}"
            _STAMP.touch()
    return PACKAGE

"""The TypeScript client's npm packages for tests: `installed()` runs `npm ci --offline` from the cache that
scripts/setup-node.sh fills (the system piece `node`), once per lockfile; `npm(...)` runs an npm command in the
package. Both hold one file lock (LOCK, which scripts/typedoc_site.py takes too) so that concurrent test workers
(this package's tests, the browser test that builds the bundle, the site's TypeDoc) never install or write
build/, dist/, bundle/ or docs-api/ at once. Nothing is fetched from the network here: a cache that lacks a
package fails the install."""

from __future__ import annotations

import fcntl
import subprocess
from pathlib import Path

from tests.system_deps import requires_system

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
CACHE = PACKAGE / ".npm-cache"
LOCK = PACKAGE / ".npm-install.lock"
_STAMP = PACKAGE / "node_modules" / ".aqueduct-installed"


def _run(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["npm", *args], cwd=PACKAGE, capture_output=True, text=True, timeout=timeout)


def npm(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run `npm ARGS` in the package folder under the lock, output captured."""
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _run(*args, timeout=timeout)


def tool(name: str, *args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run node_modules/.bin/NAME ARGS in `cwd` under the lock, output captured: a test that reinstalls
    (`npm ci` empties node_modules first) must not run while the tool reads the package's files."""
    installed()
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return subprocess.run([str(PACKAGE / "node_modules" / ".bin" / name), *args], cwd=cwd, capture_output=True,
                              text=True, timeout=timeout)


def installed() -> Path:
    """The package folder with node_modules installed from the lockfile and the offline cache (skips, or fails
    under AQUEDUCT_REQUIRE_SYSTEM=1, when the `node` piece is missing)."""
    requires_system("node")
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (_STAMP.exists() and _STAMP.stat().st_mtime >= (PACKAGE / "package-lock.json").stat().st_mtime):
            out = _run("ci", "--offline", "--cache", str(CACHE), "--no-audit", "--no-fund", timeout=240)  # (not npm():
            # the lock is held here, and a second flock of it in this process would wait for itself)
            assert out.returncode == 0, f"npm ci --offline failed:\n{out.stdout}\n{out.stderr}"
            _STAMP.touch()
    return PACKAGE

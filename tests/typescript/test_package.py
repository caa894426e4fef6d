"""The TypeScript client (clients/typescript) in CI: its own test suite (the wire codec against every golden vector,
the engine against the scenarios of specs/scenarios/, the API against a scripted server), its type check, and its
build (the ESM build with types and the one-file browser bundle). Each fails on the package's failure."""

from __future__ import annotations

import fcntl
import json
import re
import shutil
import subprocess
from pathlib import Path

from tests.typescript.npm import CACHE, LOCK, PACKAGE, installed, npm


def test_npm_test_passes() -> None:
    installed()
    out = npm("test")
    assert out.returncode == 0, f"npm test failed:\n{out.stdout[-6000:]}\n{out.stderr[-3000:]}"
    passed = re.search(r"^# pass (\d+)$", out.stdout, re.M)
    failed = re.search(r"^# fail (\d+)$", out.stdout, re.M)
    assert passed and failed, out.stdout[-2000:]
    assert int(failed.group(1)) == 0
    assert int(passed.group(1)) >= 400  # 383 vectors, the scenarios, the API tests


def test_typecheck_passes() -> None:
    installed()
    out = npm("run", "typecheck")
    assert out.returncode == 0, f"tsc --noEmit failed:\n{out.stdout[-6000:]}\n{out.stderr[-3000:]}"


def test_build_makes_the_typed_esm_build_and_the_bundle(tmp_path: Path) -> None:
    installed()
    out = npm("exec", "--", "tsc", "-p", "tsconfig.json")  # `npm run build`'s first half: dist/
    assert out.returncode == 0, f"tsc failed:\n{out.stdout[-6000:]}\n{out.stderr[-3000:]}"
    assert (PACKAGE / "dist" / "index.js").is_file()
    assert (PACKAGE / "dist" / "index.d.ts").is_file()
    # its second half, `npm run bundle`, into a file of this test's own (the browser tests read bundle/ meanwhile)
    script = json.loads((PACKAGE / "package.json").read_text())["scripts"]["bundle"]
    args = [a for a in script.split()[1:] if not a.startswith("--outfile=")]
    out = npm("exec", "--", "esbuild", *args, f"--outfile={tmp_path / 'aqueduct.js'}")
    assert out.returncode == 0, f"esbuild failed:\n{out.stdout[-6000:]}\n{out.stderr[-3000:]}"
    bundle = (tmp_path / "aqueduct.js").read_text()
    assert "export {" in bundle and "require(" not in bundle  # one ES module, nothing left for a bundler


def test_install_runs_offline_from_the_cache(tmp_path: Path) -> None:
    """`npm ci --offline` from the cache scripts/setup-node.sh fills installs the lockfile, as `installed()` does in a
    fresh clone; run in a copy of the package, for a reinstall empties node_modules first and the other test workers
    use the shared one meanwhile (CI once saw tsc find no lib files while this test reinstalled it)."""
    installed()
    for name in ("package.json", "package-lock.json"):
        shutil.copy(PACKAGE / name, tmp_path / name)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the cache is shared too
        out = subprocess.run(["npm", "ci", "--offline", "--ignore-scripts", "--cache", str(CACHE), "--no-audit",
                              "--no-fund"], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, f"npm ci --offline failed:\n{out.stdout}\n{out.stderr}"
    assert (tmp_path / "node_modules" / "cborg" / "package.json").is_file()
    assert (tmp_path / "node_modules" / "typescript" / "lib" / "lib.dom.d.ts").is_file()

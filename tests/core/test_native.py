"""The compiled wire and engine (aqueduct/native.py) against the pure-Python modules, their oracle.

- This process loaded what `aqueduct.compiled()` claims: every compiled module from its extension when
  active, from its .py file when pure (CI runs these tests in both modes: .ci/run's AQUEDUCT_PURE=1 pass).
- AQUEDUCT_PURE=1 makes a process load the .py files even when compiled modules are built and current.
- Differential: tests/core/native_oracle.py, run once in each mode, sees the same digest of every command,
  event, deadline and verdict of the random driver's seeded runs, of every golden wire vector decoded and
  mutated, and of the incremental reader fed in random chunks.
- The manifest decides: sources edited since the build, another interpreter or no build mean pure.
- Every test marked `pure_python` (it patches the insides compiled code has no seams for) is on the
  AQUEDUCT_PURE=1 line of .ci/run.
Where the compiled modules are not built (no C compiler), the tests that need them skip saying so; under
AQUEDUCT_REQUIRE_SYSTEM=1 (CI, which has a compiler) they fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import aqueduct
from aqueduct import native
from aqueduct.native import MODULES, compiled, ext_suffix, stale_reason
from tests.system_deps import REQUIRE_ENV

ROOT = Path(__file__).resolve().parents[2]
ORACLE = Path(__file__).with_name("native_oracle.py")
SEEDS = 24


def _require_built() -> None:
    why = stale_reason()
    if why is None:
        return
    message = f"compiled modules {why} (bash scripts/setup.sh builds them when a C compiler is there)"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message} [{REQUIRE_ENV}=1]", pytrace=False)
    pytest.skip(message)


def _oracle(pure: bool, dump: Path | None = None) -> dict[str, Any]:
    env = {**os.environ, native.PURE_ENV: "1" if pure else "0",
           "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, str(ORACLE), str(SEEDS), *([str(dump)] if dump else [])],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=280)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_this_process_loaded_what_it_claims() -> None:
    state = aqueduct.compiled()
    assert state is compiled() and str(state) == state.reason
    assert state.modules == (MODULES if state.active else ())
    for name in MODULES:
        module = sys.modules.get(name) or __import__(name, fromlist=["_"])
        file = str(module.__file__)
        assert file.endswith(ext_suffix() if state.active else ".py"), (name, file, state)
    from aqueduct.core import config, queue
    from aqueduct.wire import channel_id, frames

    assert type(frames.encode_frame).__name__ == ("builtin_function_or_method" if state.active else "function")
    for kept in (config, queue, channel_id):  # never compiled (native.MODULES says why)
        assert str(kept.__file__).endswith(".py")


def test_pure_env_loads_the_python_modules_even_when_compiled_ones_exist() -> None:
    run = _oracle(pure=True)
    assert run["active"] is False and "AQUEDUCT_PURE=1" in run["reason"]
    assert all(f.endswith(".py") for f in run["files"].values()), run["files"]


def test_compiled_modules_behave_as_the_pure_ones(tmp_path: Path) -> None:
    _require_built()
    pure, built = _oracle(pure=True, dump=tmp_path / "pure.txt"), _oracle(pure=False, dump=tmp_path / "compiled.txt")
    assert built["active"] is True, built["reason"]
    assert all(f.endswith(ext_suffix()) for f in built["files"].values()), built["files"]
    if built["digest"] != pure["digest"]:
        lines = zip(*((tmp_path / f"{mode}.txt").read_text().splitlines() for mode in ("pure", "compiled")),
                    strict=False)
        at, (want, got) = next((i, pair) for i, pair in enumerate(lines) if pair[0] != pair[1])
        pytest.fail(f"compiled and pure differ first at observation {at}:\npure:     {want[:2000]}\n"
                    f"compiled: {got[:2000]}", pytrace=False)


def _package_copy(tmp: Path) -> Path:
    pkg = tmp / "aqueduct"
    for path in native.sources():
        rel = path.relative_to(ROOT / "aqueduct")
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, pkg / rel)
    return pkg


def test_no_build_an_edited_source_or_another_interpreter_mean_pure(tmp_path: Path) -> None:
    pkg = _package_copy(tmp_path)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "build-compiled.py").write_text("")  # a checkout
    assert stale_reason(pkg) == "not built: scripts/setup.sh builds them"
    manifest = native.current_manifest(pkg)
    manifest["files"] = {"aqueduct.wire.varint": "aqueduct/wire/varint.so"}
    (pkg / native.DIRNAME / "aqueduct" / "wire").mkdir(parents=True)
    (pkg / native.DIRNAME / "aqueduct" / "wire" / "varint.so").write_bytes(b"")
    (pkg / native.DIRNAME / native.MANIFEST).write_text(json.dumps(manifest))
    assert stale_reason(pkg) is None
    engine = pkg / "core" / "engine.py"
    engine.write_text(engine.read_text() + "\n# edited\n")
    assert stale_reason(pkg) == "older than the sources: core/engine.py changed"
    (pkg / "wire" / "added.py").write_text("")
    assert stale_reason(pkg) == "older than the sources: core/engine.py, wire/added.py changed"
    (pkg / native.DIRNAME / native.MANIFEST).write_text(json.dumps({**manifest, "ext_suffix": ".other.so"}))
    assert stale_reason(pkg) == "built for another interpreter, .other.so"


def test_every_pure_python_test_runs_in_cis_pure_pass() -> None:
    """A test marked pure_python skips on compiled modules, so CI's AQUEDUCT_PURE=1 pass (.ci/run) must reach it."""
    ci = (ROOT / ".ci" / "run").read_text().replace("\\\n", " ")
    line = next(ln for ln in ci.splitlines() if ln.startswith("AQUEDUCT_PURE=1 "))
    paths = [ROOT / arg for arg in line.split("#")[0].split() if arg.startswith("tests/")]
    marked = [p for p in (ROOT / "tests").rglob("test_*.py") if "@pytest.mark.pure_python" in p.read_text()]
    assert marked, "no test is marked pure_python (then this check and the marker can go)"
    unreached = [str(p.relative_to(ROOT)) for p in marked if not any(p == q or q in p.parents for q in paths)]
    assert unreached == [], f"add to the AQUEDUCT_PURE=1 line of .ci/run: {unreached}"


def test_an_install_without_compiled_modules_says_what_the_user_can_do(tmp_path: Path) -> None:
    """An installed wheel has no scripts/setup.sh: its text names the reinstall that builds them, and a wheel
    built where nothing could be compiled says why (build_backend/aqueduct_build.py writes the reason)."""
    pkg = _package_copy(tmp_path)  # (no scripts/ beside it: site-packages)
    reinstall = f"pip install --force-reinstall --no-deps --no-cache-dir --no-binary {native.DISTRIBUTION} "
    why = stale_reason(pkg)
    assert why is not None and why.startswith("not built: with a C compiler") and reinstall in why
    assert "setup.sh" not in why
    (pkg / native.DIRNAME).mkdir()
    (pkg / native.DIRNAME / native.MANIFEST).write_text(json.dumps({"not_built": "no C compiler ('cc')"}))
    why = stale_reason(pkg)
    assert why is not None and why.startswith("not built when this was installed: no C compiler ('cc');")
    assert reinstall in why

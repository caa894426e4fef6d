"""aqueduct.testing (simulator, driver) imports no asyncio, aioquic or socket (core has its own test)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import aqueduct.testing


def test_testing_modules_import_no_io() -> None:
    names = [f"aqueduct.testing.{m.name}" for m in pkgutil.iter_modules(aqueduct.testing.__path__)]
    assert {"aqueduct.testing.sim", "aqueduct.testing.driver"} <= set(names)
    code = (
        "import importlib, sys\n"
        f"for n in {names!r}: importlib.import_module(n)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('asyncio', 'aioquic', 'socket')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout

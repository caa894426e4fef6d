"""aqueduct.core imports no asyncio, aioquic or socket, in any of its modules."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import aqueduct.core


def test_no_core_module_pulls_in_io() -> None:
    names = [f"aqueduct.core.{m.name}" for m in pkgutil.iter_modules(aqueduct.core.__path__)]
    assert "aqueduct.core.engine" in names
    code = (
        "import importlib, sys\n"
        f"for n in {names!r}: importlib.import_module(n)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('asyncio', 'aioquic', 'socket')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout

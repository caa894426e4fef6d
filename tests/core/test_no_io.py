"""aqueduct.core imports no asyncio, aioquic or socket, in any of its modules."""

from __future__ import annotations

import pkgutil
from collections.abc import Callable

import aqueduct.core


def test_no_core_module_pulls_in_io(io_modules_loaded_by: Callable[[list[str]], str]) -> None:
    names = [f"aqueduct.core.{m.name}" for m in pkgutil.iter_modules(aqueduct.core.__path__)]
    assert "aqueduct.core.engine" in names
    out = io_modules_loaded_by(names)
    assert out.strip() == "[]", out

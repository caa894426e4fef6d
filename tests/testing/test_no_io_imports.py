"""aqueduct.testing (simulator, driver) imports no asyncio, aioquic or socket (core has its own test). The one
exception is `aqueduct.testing.impair`, the impairment proxy: a UDP relay on asyncio by nature, which the package's
`__init__` does not import and an import-linter contract keeps out of the simulator (pyproject.toml)."""

from __future__ import annotations

import pkgutil
from collections.abc import Callable

import aqueduct.testing


def test_testing_modules_import_no_io(io_modules_loaded_by: Callable[[list[str]], str]) -> None:
    modules = pkgutil.iter_modules(aqueduct.testing.__path__)
    names = [f"aqueduct.testing.{m.name}" for m in modules if m.name != "impair"]
    assert {"aqueduct.testing.sim", "aqueduct.testing.driver"} <= set(names)
    out = io_modules_loaded_by(names)
    assert out.strip() == "[]", out

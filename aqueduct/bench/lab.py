"""The repository's bench lab, which `aqueduct bench --peers` and `--services` run: found in a checkout, at run time.

The peer rows (grpcio, ZeroMQ and NATS clients and servers) and the service rows are not part of the installed
package (issue 35): they live in the repository's `benchmarks` package. `load(name)` finds the checkout (the
current directory or one of its parents holding `benchmarks/peers/` beside a pyproject.toml), appends it to
`sys.path` (appended, not put first: the aqueduct measured stays the installed one, a wheel's compiled modules
when a wheel is installed) and imports `benchmarks.NAME`; outside a checkout it raises `LabNotFound` saying
where the lab is. aqueduct imports nothing of benchmarks (import-linter): this module names it only as a string.

The peer rows' names and workloads are the lab's; the one name the runner and report need up front (the request
rows' reference, for the targets) is `GRPC_TLS`, kept equal to the lab's by a test (decisions PERF-39, PERF-40).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Protocol

from ..errors import AqueductError

GRPC_TLS = "grpcio TLS"
"""The peer row the request/reply rows compare with (the issue's targets name it)."""
HOW = ("the peer and service rows run the repository's bench lab (benchmarks/): run `aqueduct bench --peers` "
       "from a checkout of aqueduct-quic (its root or a folder below), with the bench extra installed "
       "(pip install 'aqueduct-quic[bench]')")


class LabNotFound(AqueductError):
    """`aqueduct bench --peers` or `--services` ran outside a checkout: the bench lab is not installed."""


class PeerRow(Protocol):
    """What the runner and the report read of one of the lab's peer rows (benchmarks/peers/__init__.py)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def workloads(self) -> tuple[str, ...]: ...


def root(start: Path | None = None) -> Path | None:
    """The checkout at or above `start` (default: the current directory) holding the lab, or None."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "benchmarks" / "peers" / "__init__.py").is_file() and (folder / "pyproject.toml").is_file():
            return folder
    return None


def load(name: str) -> ModuleType:
    """The lab's module `benchmarks.NAME` ("peers", "peers.run", "services"); LabNotFound outside a checkout."""
    found = root()
    if found is None:
        raise LabNotFound(HOW)
    if str(found) not in sys.path:
        sys.path.append(str(found))
    return importlib.import_module(f"benchmarks.{name}")

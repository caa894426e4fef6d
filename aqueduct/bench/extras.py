"""Transports other installed packages add to `aqueduct bench`, found through the entry point group `aqueduct.bench`.

aqueduct imports nothing of the packages built on it (an import-linter contract says so), yet the suite
compares them side by side: a package declares, in its own pyproject.toml,

    [project.entry-points."aqueduct.bench"]
    marlin = "aeron_compat.bench.marlin:MARLIN"

naming an object shaped as `ExtraTransport`. The peer process (peer.py) asks each one to serve the TCP
rows' framed protocol (one command per stream: protocol.py, framing.py; the peer hands over its handler)
and publishes the port under the extra's `key`; the runner adds one row per extra, measured by the
client the extra makes (the TCP client's workload methods: oneway, rtt, setup); the loss curves
(loss.py, netloss.py) take the extras that ask for them. Not installed, not measured: the suite runs
without them.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from importlib.metadata import entry_points
from typing import Any, Protocol

GROUP = "aqueduct.bench"

Framed = Callable[[Any, Any], Awaitable[None]]
"""The peer's server of one framed command stream, given a reader and a writer shaped as asyncio's."""


class Served(Protocol):
    """An extra's listener in the peer process."""

    @property
    def port(self) -> int:
        """Where the measuring clients reach it (127.0.0.1)."""

    def close(self) -> None:
        """Stop serving."""


class ExtraTransport(Protocol):
    """One transport another package adds to the suite."""

    @property
    def name(self) -> str:
        """The row's name (`--only` matches it)."""

    @property
    def key(self) -> str:
        """The peer's port key for it, and its row's transport family."""

    @property
    def workloads(self) -> tuple[str, ...]:
        """The workload keys its row runs (runner.WORKLOADS)."""

    @property
    def loss_curves(self) -> bool:
        """Whether `--loss-curves` measures it too (through the UDP impairment proxy and under kernel loss)."""

    async def serve(self, framed: Framed) -> Served:
        """In the peer process: listen on 127.0.0.1 (any port), serving each stream with `framed`."""

    def client(self, port: int) -> Any:
        """A measuring client for the listener at 127.0.0.1:`port` (open, close, oneway, rtt, setup)."""


@functools.cache
def extras() -> tuple[ExtraTransport, ...]:
    """Every installed extra, by entry point name."""
    return tuple(ep.load() for ep in sorted(entry_points(group=GROUP), key=lambda ep: ep.name))


def extra_named(name: str) -> ExtraTransport | None:
    """The extra whose row is `name`."""
    return next((e for e in extras() if e.name == name), None)


def loss_paths() -> tuple[str, ...]:
    """The rows of the extras the loss curves measure."""
    return tuple(e.name for e in extras() if e.loss_curves)

"""A peer's server process: one kind of server, alone, so its CPU and memory are its own.

    python -m benchmarks.peers.serve --kind grpc-tls --cert CERT --key KEY [--uvloop]

Starts the kind's server (its module's `serve`), prints one JSON line {"info", "pids", "memory_pid"}, and
serves until its stdin closes; then stops the server (and any program it started).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aqueduct.bench.peer import stdin_closed
from aqueduct.bench.tally import Tally

from . import KINDS


@dataclass
class Served:
    """A running peer server: what its clients need, whose CPU and memory are its, and how to stop it."""

    info: dict[str, Any]
    stop: Callable[[], Awaitable[None]]
    pids: list[int] = field(default_factory=lambda: [os.getpid()])
    memory_pid: int = field(default_factory=os.getpid)
    tally: Tally = field(default_factory=Tally)
    """What the server saw, counted on its side (tally.py): the row tests read it."""


async def _serve(kind: str, cert: str, key: str) -> None:
    k = KINDS[kind]
    module = importlib.import_module(f"benchmarks.peers.{k.module}")
    served: Served = await module.serve(cert, key, k.variant)
    print(json.dumps({"info": served.info, "pids": served.pids, "memory_pid": served.memory_pid}), flush=True)
    await stdin_closed()
    await served.stop()


def main() -> None:
    """Command-line entry of a peer's server process."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", choices=list(KINDS), required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--uvloop", action="store_true")
    args = ap.parse_args()
    if args.uvloop:
        import uvloop

        uvloop.install()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args.kind, args.cert, args.key))


if __name__ == "__main__":
    main()

"""Shared by the examples: a throwaway dev certificate, a served-in-the-background server, and `exit_with` (the
synchronous examples' quiet runner; the asynchronous ones use `aqueduct.run`)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aqueduct
from aqueduct.quic.certs import DevCerts, make_dev_certs


@contextlib.asynccontextmanager
async def running_server(
    handler: Callable[[Any], Awaitable[None]], **serve_options: Any
) -> AsyncIterator[tuple[str, DevCerts]]:
    """Serve on a free loopback port with fresh certs; yield (url, certs); run `handler` per connection."""
    with tempfile.TemporaryDirectory() as tmp:
        certs = make_dev_certs(tmp)
        async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, **serve_options) as server:
            tasks: set[asyncio.Task[None]] = set()

            async def accept() -> None:
                async for conn in server:
                    task = asyncio.ensure_future(handler(conn))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)

            acceptor = asyncio.ensure_future(accept())
            host, port = server.address
            try:
                yield f"aqueduct://{host}:{port}", certs
            finally:
                acceptor.cancel()
                for task in tasks:
                    task.cancel()


def exit_with(main: Callable[[], int | None]) -> None:
    """Exit with a synchronous `main()`'s status; Ctrl-C stops it quietly (status 130, no traceback)."""
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)

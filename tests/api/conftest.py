"""Fixtures for end-to-end tests: dev certs in a temp dir and a running server with a handler."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aqueduct
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.tickets import server_key

GUARD = 20.0
"""Upper bound on any single wait: a failure guard, never a synchronisation."""


@contextlib.asynccontextmanager
async def running(
    certs: DevCerts, handler: Callable[[aqueduct.Connection], Awaitable[None]], **kwargs: Any
) -> AsyncIterator[tuple[str, aqueduct.Server]]:
    """Serve on a free loopback port, running `handler` per connection; yield (url, server)."""
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, **kwargs) as server:
        tasks: set[asyncio.Task[None]] = set()

        async def accept() -> None:
            async for conn in server:
                task = asyncio.ensure_future(handler(conn))
                tasks.add(task)

        acceptor = asyncio.ensure_future(accept())
        host, port = server.address
        try:
            yield f"aqueduct://{host}:{port}", server
        finally:
            acceptor.cancel()
            for task in tasks:
                if task.done() and not task.cancelled():
                    exc = task.exception()
                    if exc is not None and not isinstance(exc, aqueduct.ConnectionLost | aqueduct.ChannelFinished):
                        raise exc  # a handler failed for a reason other than its client leaving
                task.cancel()


async def guard(aw: Awaitable[Any]) -> Any:
    """Await with the failure-guard timeout."""
    return await asyncio.wait_for(aw, GUARD)


def readdress_ticket(store: aqueduct.MemoryTicketStore, issuer: tuple[str, int], target: tuple[str, int]) -> None:
    """Keep the ticket the server at `issuer` gave (server name 127.0.0.1) under `target`'s address: the client
    then presents it at `target` (an on-path proxy, or a server that never issued it)."""
    ticket = store.take(server_key("127.0.0.1", *issuer))
    assert ticket is not None
    store.put(server_key("127.0.0.1", *target), ticket)

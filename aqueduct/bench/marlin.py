"""Marlin Stream in the bench: its measuring client and its server side, the one place aqueduct/bench meets
aeron_compat.

The Stream rows speak the TCP rows' framed protocol, one command per Stream stream (protocol.py):
`StreamClient` is the TCP client over one Stream connection, and `listen` serves each accepted stream
with the TCP server's handler (peer.py passes it in). Everything else in aqueduct/bench depends on
aqueduct and the peer libraries only; this module is what moves when the Marlin rows move out of the
installed package (issue 27).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from aeron_compat.stream.aio import StreamConnection, StreamEndpoint
from aqueduct.errors import AqueductError

from .clients import TcpClient
from .framing import Deframer, frame
from .protocol import PING


class StreamClient(TcpClient):
    """The TCP rows' workloads over one Marlin Stream connection: one Stream stream per workload.

    A Stream stream's reader/writer pair behaves as asyncio's (write, drain, write_eof, close,
    `transport.get_write_buffer_size()`), so the framing, commands and bounds are the TCP client's.
    """

    def __init__(self, port: int) -> None:
        super().__init__(port)
        self.endpoint: StreamEndpoint | None = None
        self.conn: StreamConnection | None = None

    async def open(self) -> None:
        """Dial the peer's Stream endpoint."""
        self.endpoint = await StreamEndpoint.bind()
        self.conn = await self.endpoint.dial(("127.0.0.1", self.port))

    async def close(self) -> None:
        """Reset the connection and close the socket."""
        if self.conn is not None:
            self.conn.close()
        if self.endpoint is not None:
            self.endpoint.close()

    async def _conn(self, cmd: bytes) -> tuple[asyncio.StreamReader, Any]:
        assert self.conn is not None
        reader, writer = self.conn.open_stream()
        writer.write(frame(cmd))
        return reader, writer

    async def setup(self, zero_rtt: bool) -> tuple[float, bool]:
        """Seconds from dial to the first echo on a new connection (Stream has no 0-RTT)."""
        start = time.perf_counter()
        endpoint = await StreamEndpoint.bind()
        try:
            conn = await endpoint.dial(("127.0.0.1", self.port))
            reader, writer = conn.open_stream()
            writer.write(frame(PING))
            await self._frame(reader, Deframer(), deque())
            took = time.perf_counter() - start
            conn.close()
        finally:
            endpoint.close()
        return took, False


class _Listening:
    """A listening Stream endpoint and its accepting task; `close` ends both."""

    def __init__(self, endpoint: StreamEndpoint, task: asyncio.Task[None]) -> None:
        self.endpoint, self.task = endpoint, task

    def close(self) -> None:
        self.task.cancel()
        self.endpoint.close()


async def listen(serve: Callable[[Any, Any], Awaitable[None]]) -> tuple[_Listening, int]:
    """Listen on a free loopback port; each accepted Stream stream is served by `serve(reader, writer)` (the
    TCP rows' handler). (the listener, its port)."""
    endpoint = await StreamEndpoint.listen("127.0.0.1", 0)
    tasks: set[asyncio.Task[None]] = set()

    async def streams(conn: Any) -> None:
        with contextlib.suppress(AqueductError):
            while True:
                reader, writer = await conn.accept_stream()
                t = asyncio.ensure_future(one(reader, writer))
                tasks.add(t)
                t.add_done_callback(tasks.discard)

    async def one(reader: Any, writer: Any) -> None:
        with contextlib.suppress(AqueductError):  # the measuring client resets its connection when done
            await serve(reader, writer)

    async def accept() -> None:
        while True:
            conn = await endpoint.accept()
            t = asyncio.ensure_future(streams(conn))
            tasks.add(t)
            t.add_done_callback(tasks.discard)

    return _Listening(endpoint, asyncio.ensure_future(accept())), endpoint.address[1]

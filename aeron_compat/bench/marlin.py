"""The "marlin stream" row of `aqueduct bench`: the TCP rows' workloads over Marlin Stream.

An `ExtraTransport` (aqueduct/bench/extras.py), named by the `aqueduct.bench` entry point `marlin`. In the
peer process, a listening Stream endpoint whose every stream speaks the TCP rows' framed protocol (one
command per stream, served by the peer's own handler); in the measuring process, `MarlinClient`: one
Stream connection, one Stream stream per workload. A Stream stream's reader/writer pair behaves as
asyncio's (write, drain, write_eof, close, `transport.get_write_buffer_size()`), so the framing, commands
and bounds are the TCP client's. Also measured by `--loss-curves` (Stream's own loss recovery is what the
curves are for).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Coroutine
from typing import Any

from aqueduct.bench.clients import TcpClient
from aqueduct.bench.extras import Framed
from aqueduct.bench.framing import Deframer, frame
from aqueduct.bench.protocol import PING
from aqueduct.errors import AqueductError

from ..marlin.aio import StreamConnection, StreamEndpoint


class MarlinClient(TcpClient):
    """The TCP rows' workloads over one Marlin Stream connection: one Stream stream per workload."""

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


class MarlinServed:
    """The peer's Stream listener: each connection's streams served with the framed protocol."""

    def __init__(self, endpoint: StreamEndpoint, framed: Framed) -> None:
        self.endpoint, self.framed = endpoint, framed
        self.port = endpoint.address[1]
        self._tasks: set[asyncio.Task[None]] = set()
        self._accepting = self._start(self._accept())

    def _start(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _accept(self) -> None:
        while True:
            conn = await self.endpoint.accept()
            self._start(self._streams(conn))

    async def _streams(self, conn: StreamConnection) -> None:
        with contextlib.suppress(AqueductError):
            while True:
                reader, writer = await conn.accept_stream()
                self._start(self._serve(reader, writer))

    async def _serve(self, reader: asyncio.StreamReader, writer: Any) -> None:
        with contextlib.suppress(AqueductError):  # the measuring client resets its connection when done
            await self.framed(reader, writer)

    def close(self) -> None:
        """Stop accepting and close the endpoint."""
        self._accepting.cancel()
        self.endpoint.close()


class MarlinRow:
    """The "marlin stream" row (an aqueduct.bench.extras.ExtraTransport)."""

    name = "marlin stream"
    key = "stream"
    workloads = ("msg64", "msg16k", "bulk", "rtt_p50", "rtt_p99", "setup_1rtt")
    loss_curves = True

    async def serve(self, framed: Framed) -> MarlinServed:
        """A Stream listener on a free loopback port."""
        return MarlinServed(await StreamEndpoint.listen("127.0.0.1", 0), framed)

    def client(self, port: int) -> MarlinClient:
        """A client of the listener at 127.0.0.1:`port`."""
        return MarlinClient(port)


MARLIN = MarlinRow()
"""The object the `aqueduct.bench` entry point `marlin` names."""

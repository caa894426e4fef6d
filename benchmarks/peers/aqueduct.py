"""Aqueduct's rows in the peer harness: the same workloads as the peers, its server alone in its process.

The server serves the bench commands (aqueduct/bench/aqserver.py) with the raw codec and, for the typed row, the CBOR
codec, with single-use tickets so 0-RTT is measured (as peer.py's). Client variants:

- "request": `call` is `aqueduct.request` on the entrypoint, a fresh oneshot carrying each reply
  (what a typed service's call is built on);
- "pair": requests on one pre-opened channel pair (ECHO), pipelined: with n in flight, n messages are
  out and each reply, arriving in order, lets the next go; a call's latency is its send to its reply;
- "raw": 64 B streaming, connect to first reply (1-RTT and 0-RTT), idle connections;
- "typed": 64 B streaming of a typed message (aqueduct/bench/typed.py), checked and converted at both ends.

Function API: peers/__init__.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aqueduct
from aqueduct.bench import aqserver
from aqueduct.bench.clients import AqueductClient, Rate
from aqueduct.bench.protocol import REQUEST, pack, unpack
from aqueduct.bench.settings import bench_settings
from aqueduct.bench.tally import Tally

from .serve import Served


async def serve(cert: str, key: str, variant: str) -> Served:
    """Aqueduct servers with the raw and the CBOR codec on free loopback ports."""
    settings = bench_settings()
    servers = contextlib.AsyncExitStack()
    raw_server = await servers.enter_async_context(aqueduct.serve(
        "127.0.0.1", 0, cert=cert, key=key, codec=aqueduct.RawCodec(), settings=settings, single_use_tickets=True))
    cbor_server = await servers.enter_async_context(aqueduct.serve(
        "127.0.0.1", 0, cert=cert, key=key, codec=aqueduct.CborCodec(), settings=settings, single_use_tickets=True))
    tally = Tally()
    tasks = [asyncio.ensure_future(aqserver.accept(raw_server, "raw", tally)),
             asyncio.ensure_future(aqserver.accept(cbor_server, "cbor", tally))]

    async def stop() -> None:
        for task in tasks:
            task.cancel()
        await servers.aclose()

    return Served({"port": raw_server.address[1], "cbor": cbor_server.address[1]}, stop, tally=tally)


class Client:
    """The bench's Aqueduct client (aqueduct/bench/clients.py) in the peer API."""

    def __init__(self, info: dict[str, Any], ca: Path, variant: str = "raw") -> None:
        typed = variant == "typed"
        self.variant = variant
        self.client = AqueductClient(info["cbor" if typed else "port"], ca, "cbor" if typed else "raw",
                                     aqueduct.Delivery.ORDERED, typed=typed)

    async def open(self) -> None:
        """Connect (1-RTT)."""
        await self.client.open()

    async def close(self) -> None:
        """Close the connection."""
        await self.client.close()

    async def call(self, body: bytes) -> bytes:
        """One request with a fresh oneshot for its reply."""
        return await self.client.call(body)

    async def calls(self, body: bytes, inflight: int, window: float) -> list[float]:
        """The "pair" variant's request/reply: seconds per call, `inflight` pipelined on one channel pair."""
        tx, rx = await self.client.echo_pair()
        sent: deque[float] = deque()
        out: list[float] = []
        message = pack("raw", body)
        deadline = time.perf_counter() + window
        for _ in range(inflight):
            sent.append(time.perf_counter())
            await tx.send(message)
        while sent:
            if unpack("raw", await rx.recv())[0] != body:
                raise RuntimeError("a reply differs from its request")
            now = time.perf_counter()
            out.append(now - sent.popleft())
            if now < deadline:
                sent.append(time.perf_counter())
                await tx.send(message)
        await tx.finish()
        return out

    async def oneway(self, size: int, window: float, limit: int) -> Rate:
        """`size`-byte messages (a typed message for "typed") on a fresh channel; the server counts them."""
        return await self.client.oneway(size, window, limit)

    async def connect_first_reply(self, zero_rtt: bool = False) -> float:
        """Seconds from `connect()` to the first reply on a new connection (0-RTT: with a ticket from the
        previous connection)."""
        if zero_rtt and not self.client.tickets.arrived.is_set():
            await self.client.setup(True)  # obtains the first ticket
        return (await self.client.setup(zero_rtt))[0]

    async def open_idle(self) -> Callable[[], Awaitable[None]]:
        """One more connection, used for one request, then idle; returns its close."""
        conn = await aqueduct.connect(self.client.url, ca=self.client.ca, codec=aqueduct.RawCodec(),
                                      settings=self.client.settings)
        await aqueduct.request(conn.entrypoint, lambda r: pack("raw", REQUEST + b"p", [r]))
        close: Callable[[], Awaitable[None]] = conn.close
        return close

"""Aqueduct's rows in the peer harness: the same workloads as the peers, its server alone in its process.

The server serves the bench commands (aqueduct/bench/aqserver.py) with the raw codec and, for the typed row, the
CBOR codec, and a typed entrypoint of `Call`s, with single-use tickets so 0-RTT is measured (as peer.py's); it
counts what it saw in its `Served.tally`. Client variants:

- "request": `call` is `aqueduct.request` on the entrypoint, a fresh oneshot carrying each reply (raw codec,
  the bench commands' untyped entrypoint);
- "typed request": the same on a typed entrypoint (`Call`: a body and its reply oneshot, msgspec-checked),
  what a user writes and a typed service call is built on: issue 34's targets compare this row;
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

import msgspec

import aqueduct
from aqueduct.bench import aqserver
from aqueduct.bench.clients import AqueductClient, Rate
from aqueduct.bench.protocol import REQUEST, pack, unpack
from aqueduct.bench.settings import bench_settings
from aqueduct.bench.tally import Tally

from .serve import Served


class Call(msgspec.Struct):
    """The "typed request" row's request: a typed entrypoint's message carrying its reply oneshot (what a user
    writes for a request, and what a typed service call is built on)."""

    body: bytes
    reply: aqueduct.OneshotSender[bytes]


async def _answer_typed(conn: aqueduct.Connection[Any], tally: Tally) -> None:
    tally.connected(conn)
    with contextlib.suppress(aqueduct.AqueductError):
        async for call in conn.entrypoint:
            tally.channels += 1  # the call's reply oneshot
            await call.reply.send(call.body)
            tally.calls += 1


async def _accept_typed(server: aqueduct.Server[Any], tally: Tally) -> None:
    tasks: set[asyncio.Task[None]] = set()
    async for conn in server:
        task = asyncio.ensure_future(_answer_typed(conn, tally))
        tasks.add(task)
        task.add_done_callback(tasks.discard)


async def serve(cert: str, key: str, variant: str) -> Served:
    """Aqueduct servers on free loopback ports: the bench commands with the raw and the CBOR codec, and a typed
    entrypoint of `Call`s."""
    settings = bench_settings()
    servers = contextlib.AsyncExitStack()
    raw_server = await servers.enter_async_context(aqueduct.serve(
        "127.0.0.1", 0, cert=cert, key=key, codec=aqueduct.RawCodec(), settings=settings, single_use_tickets=True))
    cbor_server = await servers.enter_async_context(aqueduct.serve(
        "127.0.0.1", 0, cert=cert, key=key, codec=aqueduct.CborCodec(), settings=settings, single_use_tickets=True))
    typed_server = await servers.enter_async_context(aqueduct.serve(
        "127.0.0.1", 0, cert=cert, key=key, entrypoint=Call, settings=settings, single_use_tickets=True))
    tally = Tally()
    tasks = [asyncio.ensure_future(aqserver.accept(raw_server, "raw", tally)),
             asyncio.ensure_future(aqserver.accept(cbor_server, "cbor", tally)),
             asyncio.ensure_future(_accept_typed(typed_server, tally))]

    async def stop() -> None:
        for task in tasks:
            task.cancel()
        await servers.aclose()

    return Served({"port": raw_server.address[1], "cbor": cbor_server.address[1],
                   "typed": typed_server.address[1]}, stop, tally=tally)


class Client:
    """The bench's Aqueduct client (aqueduct/bench/clients.py) in the peer API."""

    def __init__(self, info: dict[str, Any], ca: Path, variant: str = "raw") -> None:
        typed = variant == "typed"
        self.variant = variant
        self.client = AqueductClient(info["cbor" if typed else "port"], ca, "cbor" if typed else "raw",
                                     aqueduct.Delivery.ORDERED, typed=typed)
        self.typed_url = f"aqueduct://127.0.0.1:{info['typed']}"
        self.typed_conn: aqueduct.Connection[aqueduct.Sender[Call]] | None = None

    async def open(self) -> None:
        """Connect (1-RTT); the "typed request" variant to the typed entrypoint."""
        if self.variant == "typed request":
            self.typed_conn = await aqueduct.connect(self.typed_url, ca=self.client.ca, entrypoint=Call,
                                                     settings=self.client.settings)
        else:
            await self.client.open()

    async def close(self) -> None:
        """Close the connection."""
        if self.typed_conn is not None:
            await self.typed_conn.close()
        await self.client.close()

    async def call(self, body: bytes) -> bytes:
        """One request with a fresh oneshot for its reply: `aqueduct.request` on the bench commands' entrypoint,
        or ("typed request") on the typed entrypoint with a `Call` (its reply field the oneshot)."""
        if self.typed_conn is not None:
            reply: bytes = await aqueduct.request(self.typed_conn.entrypoint, lambda r: Call(body, r))
            return reply
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

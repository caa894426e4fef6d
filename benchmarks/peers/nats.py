"""NATS as a bench peer: nats-py clients through a local `nats-server` (the Debian package's program).

The server process starts `nats-server` on a free loopback port (a process of its own: its CPU counts
on the server's side, with the responder's; its RSS is the server's memory per connection) and a
responder connection subscribed to three subjects: `bench.call` answers each request with its data;
`bench.sink` counts messages; `bench.count` answers the count since the last such request and resets
it. NATS keeps one publisher's messages in order to a subscriber, so a count request published after
the stream on the same connection arrives after it.

Function API: peers/__init__.py.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import nats

from aqueduct.bench.clients import Rate
from aqueduct.bench.protocol import decode_count, encode_count
from aqueduct.bench.tally import Tally

from . import find_program
from .serve import Served

HOST = "127.0.0.1"
CALL, SINK, COUNT = "bench.call", "bench.sink", "bench.count"
TIMEOUT = 30.0
STARTUP = 10.0
"""Seconds nats-server may take to accept connections."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


async def _connect(url: str, **options: Any) -> Any:
    return await nats.connect(url, allow_reconnect=False, connect_timeout=TIMEOUT, **options)


async def serve(cert: str, key: str, variant: str) -> Served:
    """nats-server on a free loopback port, and the responder (no TLS: NATS rows are plain TCP)."""
    program = find_program("nats-server")
    if program is None:
        raise RuntimeError("nats-server not installed (scripts/setup-system.sh nats)")
    port = _free_port()
    proc = subprocess.Popen([program, "-a", HOST, "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"nats://{HOST}:{port}"
    deadline = time.monotonic() + STARTUP
    while True:
        try:
            nc = await _connect(url, max_reconnect_attempts=0)
            break
        except Exception:  # (nats-py raises several kinds while the server is not up yet)
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("nats-server did not start") from None
            await asyncio.sleep(0.05)
    count = 0
    tally = Tally()
    clients: set[str] = set()

    async def on_call(msg: Any) -> None:
        inbox = msg.reply.rsplit(".", 1)[0]  # a client connection's reply inbox: one per connection
        if inbox not in clients:
            clients.add(inbox)
            tally.connected(inbox)
        tally.calls += 1
        await msg.respond(msg.data)

    async def on_sink(msg: Any) -> None:
        nonlocal count
        count += 1

    async def on_count(msg: Any) -> None:
        nonlocal count
        n, count = count, 0
        tally.messages += n
        await msg.respond(encode_count(n))

    await nc.subscribe(CALL, cb=on_call)
    await nc.subscribe(SINK, cb=on_sink)
    await nc.subscribe(COUNT, cb=on_count)
    await nc.flush()

    async def stop() -> None:
        await nc.close()
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()

    return Served({"url": url}, stop, pids=[os.getpid(), proc.pid], memory_pid=proc.pid, tally=tally)


class Client:
    """One client connection for calls and streams; new ones for connect and idle connections."""

    def __init__(self, info: dict[str, Any], ca: Path, variant: str = "") -> None:
        self.url = info["url"]
        self.nc: Any = None

    async def open(self) -> None:
        """Connect."""
        self.nc = await _connect(self.url)

    async def close(self) -> None:
        """Close the connection."""
        if self.nc is not None:
            await self.nc.close()

    async def call(self, body: bytes) -> bytes:
        """One request (nats-py's request: a reply subject multiplexed on the connection)."""
        msg = await self.nc.request(CALL, body, timeout=TIMEOUT)
        data: bytes = msg.data
        return data

    async def oneway(self, size: int, window: float, limit: int) -> Rate:
        """Publish `size`-byte messages for `window` seconds (nats-py flushes its buffer as it fills), then
        ask the count."""
        payload = b"x" * size
        publish = self.nc.publish
        start = time.perf_counter()
        deadline = start + window
        n = 0
        while n < limit:
            await publish(SINK, payload)
            n += 1
            if time.perf_counter() >= deadline:
                break
        got = decode_count((await self.nc.request(COUNT, b"", timeout=TIMEOUT)).data)
        return Rate(got, got * size, time.perf_counter() - start)

    async def connect_first_reply(self, zero_rtt: bool = False) -> float:
        """Seconds from a new connection (TCP, INFO/CONNECT, PING/PONG) to its first request's answer."""
        start = time.perf_counter()
        nc = await _connect(self.url)
        await nc.request(CALL, b"p", timeout=TIMEOUT)
        took = time.perf_counter() - start
        await nc.close()
        return took

    async def open_idle(self) -> Callable[[], Awaitable[None]]:
        """One more connection, used for one request, then idle; returns its close."""
        nc = await _connect(self.url)
        await nc.request(CALL, b"p", timeout=TIMEOUT)
        close: Callable[[], Awaitable[None]] = nc.close
        return close

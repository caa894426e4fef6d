"""pyzmq as a bench peer: DEALER/ROUTER request/reply and PUSH/PULL one-way streaming over TCP.

The server binds a ROUTER and a PULL socket on free loopback ports. A request is [id, body] from a
DEALER (the ROUTER sees [peer, id, body]) and is answered [id, body], so many requests can be in flight
on one socket, matched by id (REQ/REP allows one). Streaming pushes `size`-byte messages (ZeroMQ's high-
water mark paces `send`), then an end marker [b"", token]; the client then asks for the count on its
DEALER with an id starting b"C" and the token, and the server answers once the PULL side has seen that
end marker (the two sockets are two connections, so the request may overtake the stream).

Function API: peers/__init__.py.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import zmq
import zmq.asyncio

from aqueduct.bench.clients import Rate
from aqueduct.bench.protocol import decode_count, encode_count
from aqueduct.bench.tally import Tally

from .serve import Served

HOST = "127.0.0.1"
COUNT = b"C"


def _port(sock: zmq.asyncio.Socket) -> int:
    endpoint = sock.getsockopt(zmq.LAST_ENDPOINT)
    assert isinstance(endpoint, bytes)
    return int(endpoint.rsplit(b":", 1)[1])


async def serve(cert: str, key: str, variant: str) -> Served:
    """ROUTER (request/reply) and PULL (streaming) on free loopback ports (ZeroMQ has no TLS: plain TCP)."""
    ctx = zmq.asyncio.Context()
    router, pull = ctx.socket(zmq.ROUTER), ctx.socket(zmq.PULL)
    router.bind(f"tcp://{HOST}:*")
    pull.bind(f"tcp://{HOST}:*")
    counts: dict[bytes, asyncio.Future[int]] = {}
    tally = Tally()
    clients: set[bytes] = set()

    def count_of(token: bytes) -> asyncio.Future[int]:
        return counts.setdefault(token, asyncio.get_running_loop().create_future())

    async def answer_count(peer: bytes, rid: bytes, token: bytes) -> None:
        n = await count_of(token)
        del counts[token]
        await router.send_multipart([peer, rid, encode_count(n)])

    tasks: set[asyncio.Task[None]] = set()

    async def requests() -> None:
        while True:
            peer, rid, body = await router.recv_multipart()
            if peer not in clients:  # the ROUTER's routing id: one per DEALER connection
                clients.add(peer)
                tally.connected(peer)
            if rid[:1] == COUNT:
                task = asyncio.ensure_future(answer_count(peer, rid, body))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            else:
                tally.calls += 1
                await router.send_multipart([peer, rid, body])

    async def sink() -> None:
        n = 0
        while True:
            parts = await pull.recv_multipart()
            if len(parts) == 1:
                n += 1
            else:
                tally.messages += n
                count_of(parts[1]).set_result(n)
                n = 0

    loops = [asyncio.ensure_future(requests()), asyncio.ensure_future(sink())]

    async def stop() -> None:
        for task in loops:
            task.cancel()
        ctx.destroy(linger=0)

    return Served({"port": _port(router), "pull": _port(pull)}, stop, tally=tally)


class Client:
    """Requests on one DEALER socket (a reader task matches answers to ids); streams on a PUSH socket."""

    def __init__(self, info: dict[str, Any], ca: Path, variant: str = "") -> None:
        self.router = f"tcp://{HOST}:{info['port']}"
        self.pull = f"tcp://{HOST}:{info['pull']}"
        self.ctx = zmq.asyncio.Context()
        self.dealer: zmq.asyncio.Socket | None = None
        self.waiting: dict[bytes, asyncio.Future[bytes]] = {}
        self.ids = itertools.count()
        self.reader: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Connect the DEALER and start reading its answers."""
        self.dealer = self.ctx.socket(zmq.DEALER)
        self.dealer.connect(self.router)
        self.reader = asyncio.ensure_future(self._read(self.dealer))

    async def _read(self, sock: zmq.asyncio.Socket) -> None:
        while True:
            rid, body = await sock.recv_multipart()
            fut = self.waiting.pop(rid, None)
            if fut is not None and not fut.done():
                fut.set_result(body)

    async def close(self) -> None:
        """Stop reading; close every socket."""
        if self.reader is not None:
            self.reader.cancel()
        self.ctx.destroy(linger=0)

    async def _ask(self, rid: bytes, body: bytes) -> bytes:
        assert self.dealer is not None
        fut = self.waiting[rid] = asyncio.get_running_loop().create_future()
        await self.dealer.send_multipart([rid, body])
        answer: bytes = await fut
        return answer

    async def call(self, body: bytes) -> bytes:
        """One request; the server answers with `body`."""
        return await self._ask(next(self.ids).to_bytes(8, "big"), body)

    async def oneway(self, size: int, window: float, limit: int) -> Rate:
        """PUSH `size`-byte messages for `window` seconds, an end marker, then ask the count."""
        push = self.ctx.socket(zmq.PUSH)
        push.connect(self.pull)
        token = os.urandom(8)
        payload = b"x" * size
        start = time.perf_counter()
        deadline = start + window
        n = 0
        while n < limit:
            await push.send(payload)
            n += 1
            if time.perf_counter() >= deadline:
                break
        await push.send_multipart([b"", token])
        got = decode_count(await self._ask(COUNT + next(self.ids).to_bytes(8, "big"), token))
        push.close(linger=0)
        return Rate(got, got * size, time.perf_counter() - start)

    async def _new_dealer(self) -> zmq.asyncio.Socket:
        sock = self.ctx.socket(zmq.DEALER)
        sock.connect(self.router)
        await sock.send_multipart([b"0", b"p"])
        await sock.recv_multipart()
        return sock

    async def connect_first_reply(self, zero_rtt: bool = False) -> float:
        """Seconds from a new DEALER socket's connect to its first answer (TCP and the ZMTP greeting)."""
        start = time.perf_counter()
        sock = await self._new_dealer()
        took = time.perf_counter() - start
        sock.close(linger=0)
        return took

    async def open_idle(self) -> Callable[[], Awaitable[None]]:
        """One more connection (a DEALER socket), used once, then idle; returns its close."""
        sock = await self._new_dealer()

        async def close() -> None:
            sock.close(linger=0)

        return close

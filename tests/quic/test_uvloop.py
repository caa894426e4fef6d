"""Client and server on uvloop (the `fast` extra), each test on its own uvloop loop (not a global policy).

A client's UDP socket is connected to the server (so ICMP port unreachable reaches it); uvloop
refuses a `sendto` that names an address on a connected socket (EISCONN, reported to
`error_received` on every send), so a client that sent as aioquic does never reached its server.
Covered: connect, a request with a reply channel, an ordered stream of messages, unreliable
messages, and a client moving to a new socket (`rebind` connects the new one too).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import uvloop

import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.endpoint import rebind
from tests.api.conftest import GUARD, guard, running

MESSAGES = 2_000


def on_uvloop(test: Callable[[], Awaitable[Any]]) -> Any:
    """Run `test()` on a fresh uvloop loop (with the failure guard), as `asyncio.run` would."""

    async def guarded() -> Any:
        assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
        return await asyncio.wait_for(test(), 3 * GUARD)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(guarded())


class Ask(msgspec.Struct):
    sym: str
    reply: aqueduct.OneshotSender[float]


async def _desk(conn: aqueduct.Connection) -> None:
    async for ask in conn.entrypoint:
        await ask.reply.send(100.0 if ask.sym == "X" else 0.0)


def test_connect_and_request_on_uvloop(certs: DevCerts) -> None:
    async def test() -> None:
        async with running(certs, _desk, entrypoint=Ask) as (url, _server):
            async with await guard(aqueduct.connect(url, ca=certs.ca, entrypoint=Ask)) as conn:
                for _ in range(3):
                    quote = await aqueduct.request(conn.entrypoint, lambda reply: Ask("X", reply), timeout=GUARD)
                    assert quote == 100.0

    on_uvloop(test)


def test_streaming_on_uvloop(certs: DevCerts) -> None:
    """An ordered channel of MESSAGES messages, in order and complete; unreliable messages arrive too."""
    async def handler(conn: aqueduct.Connection) -> None:
        async for msg in conn.entrypoint:
            if msg["kind"] == "stream":
                got = [m async for m in msg["rx"]]
                await msg["done"].send(got == list(range(MESSAGES)))
            else:
                async for _ in msg["rx"]:
                    await msg["done"].send(True)  # one unreliable message arrived
                    break

    async def test() -> None:
        async with running(certs, handler) as (url, _server):
            async with await guard(aqueduct.connect(url, ca=certs.ca)) as conn:
                tx, rx = aqueduct.channel()
                done_tx, done_rx = aqueduct.oneshot()
                await conn.entrypoint.send({"kind": "stream", "rx": rx, "done": done_tx})
                async with tx:
                    for i in range(MESSAGES):
                        await tx.send(i)
                assert await guard(done_rx.recv()) is True

                utx, urx = aqueduct.channel("unreliable")
                udone_tx, udone_rx = aqueduct.oneshot()
                await conn.entrypoint.send({"kind": "unreliable", "rx": urx, "done": udone_tx})
                arrived = asyncio.ensure_future(udone_rx.recv())
                while not arrived.done():  # (unreliable: resend until one arrives)
                    await utx.send(b"ping")
                    await asyncio.wait([arrived], timeout=0.05)
                assert arrived.result() is True

    on_uvloop(test)


def test_a_client_moves_to_a_new_socket_on_uvloop(certs: DevCerts) -> None:
    async def handler(conn: aqueduct.Connection) -> None:
        async for msg in conn.entrypoint:
            async with msg["reply"] as reply:
                await reply.send(msg["n"])

    async def test() -> None:
        async with running(certs, handler) as (url, _server):
            async with await guard(aqueduct.connect(url, ca=certs.ca)) as conn:
                for n in range(2):
                    reply_tx, reply_rx = aqueduct.channel()
                    await conn.entrypoint.send({"n": n, "reply": reply_tx})
                    assert await guard(reply_rx.recv()) == n
                    if n == 0:
                        await rebind(link_of(conn).protocol)

    on_uvloop(test)

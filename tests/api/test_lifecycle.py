"""Connection lifecycle: idle timeout, keep-alive, and dropped handles (garbage collection) reaching the peer."""

from __future__ import annotations

import asyncio
import gc

import pytest

import aqueduct
from aqueduct import ChannelCancelled, ConnectionLost
from aqueduct.errors import EndReason
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running


async def test_idle_timeout_ends_every_handle(certs: DevCerts) -> None:
    settings = aqueduct.TransportSettings(idle_timeout=0.5, keepalive=None)

    async def handler(conn: aqueduct.Connection) -> None:
        await conn.wait_closed()

    async with running(certs, handler, settings=settings) as (url, _):
        conn = await aqueduct.connect(url, ca=certs.ca, settings=settings)
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send({"rx": rx})
        await guard(conn.wait_closed())
        with pytest.raises(ConnectionLost):
            await tx.send("after idle")


async def test_keepalive_holds_an_idle_connection_open(certs: DevCerts) -> None:
    settings = aqueduct.TransportSettings(idle_timeout=1.0, keepalive=0.1)
    got: asyncio.Queue[str] = asyncio.Queue()

    async def handler(conn: aqueduct.Connection) -> None:
        async for msg in conn.entrypoint:
            got.put_nowait(msg)

    async with running(certs, handler, settings=settings) as (url, _), aqueduct.connect(
        url, ca=certs.ca, settings=settings
    ) as conn:
        await asyncio.sleep(2.5)  # the scenario itself: idle for longer than the idle timeout
        assert not conn.is_closed
        await conn.entrypoint.send("still here")
        assert await guard(got.get()) == "still here"


async def test_the_client_keeps_the_connection_alive_not_the_server(certs: DevCerts) -> None:
    """Keep-alive PINGs are the client's: a server's connections send none (one side's PINGs reset both ends'
    idle timers; a server pinging too doubled what each idle connection costs it). So a client that sends
    none is timed out, however eager the server's keepalive setting."""
    server_settings = aqueduct.TransportSettings(idle_timeout=0.6, keepalive=0.1)
    client_settings = aqueduct.TransportSettings(idle_timeout=0.6, keepalive=None)

    async def handler(conn: aqueduct.Connection) -> None:
        await conn.wait_closed()

    async with running(certs, handler, settings=server_settings) as (url, _):
        conn = await aqueduct.connect(url, ca=certs.ca, settings=client_settings)
        closed = await guard(conn.wait_closed())
        assert "idle" in closed.reason.lower()  # an idle timer ended it: the server never pinged


async def test_dropped_handles_reach_the_peer(certs: DevCerts) -> None:
    outcomes: asyncio.Queue[object] = asyncio.Queue()

    async def handler(conn: aqueduct.Connection) -> None:
        async for req in conn.entrypoint:
            if "rx" in req:  # we hold the receiver of a channel; the client drops its sender
                try:
                    await req["rx"].recv()
                except ChannelCancelled:
                    outcomes.put_nowait("cancelled")
            else:  # we hold a sender; the client drops its receiver
                outcomes.put_nowait(await req["tx"].ended())

    async with running(certs, handler) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send({"rx": rx})
        del tx
        gc.collect()
        assert await guard(outcomes.get()) == "cancelled"

        tx2, rx2 = aqueduct.channel()
        await conn.entrypoint.send({"tx": tx2})
        del rx2
        gc.collect()
        assert await guard(outcomes.get()) is EndReason.RECEIVER_DROPPED

"""Graceful shutdown: `Server.drain` and `aqueduct serve` on SIGTERM.

Draining stops accepting, lets open channels finish within the grace period, closes each connection with
SHUTTING_DOWN once only its entrypoint is left (or when the grace period ends), then the server is done.
"""

from __future__ import annotations

import asyncio
import signal
import sys

import pytest
from harness.signals import terminal_sigint

import aqueduct
from aqueduct import CloseCode, RawCodec, RawMessage
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running

CLI = [sys.executable, "-m", "aqueduct"]


class Holder:
    """Server: the receiver attached to each entrypoint message is held open; what arrives on it is queued."""

    def __init__(self) -> None:
        self.held: asyncio.Queue[str] = asyncio.Queue()

    async def __call__(self, conn: aqueduct.Connection) -> None:
        async for msg in conn.entrypoint:
            async for text in msg["hold"]:
                self.held.put_nowait(text)


async def test_drain_waits_for_open_channels_then_closes_with_shutting_down(certs: DevCerts) -> None:
    holder = Holder()
    async with running(certs, holder) as (url, server), aqueduct.connect(url, ca=certs.ca) as conn:
        held_tx, held_rx = aqueduct.channel()
        await conn.entrypoint.send({"hold": held_rx})
        await held_tx.send("busy")
        assert await guard(holder.held.get()) == "busy"  # the server holds the channel open now
        draining = asyncio.ensure_future(server.drain(grace=60.0))
        # no new connections while draining (dropped: the attempt times out)
        with pytest.raises(aqueduct.ConnectError, match="no answer"):
            await guard(aqueduct.connect(url, ca=certs.ca, connect_timeout=0.3))
        assert not draining.done()
        await held_tx.send("still served while draining")
        assert await guard(holder.held.get()) == "still served while draining"
        await held_tx.finish()  # the last open channel ends: the connection is idle, so it is closed now
        closed = await guard(conn.wait_closed())
        assert closed.error_code == CloseCode.SHUTTING_DOWN
        await guard(draining)  # long before the 60 s grace period
        assert server.admission.refused >= 1


async def test_drain_closes_busy_connections_when_grace_ends(certs: DevCerts) -> None:
    holder = Holder()
    async with running(certs, holder) as (url, server), aqueduct.connect(url, ca=certs.ca) as conn:
        held_tx, held_rx = aqueduct.channel()
        await conn.entrypoint.send({"hold": held_rx})
        await held_tx.send("busy forever")
        assert await guard(holder.held.get()) == "busy forever"
        await guard(server.drain(grace=0.2))
        closed = await guard(conn.wait_closed())
        assert closed.error_code == CloseCode.SHUTTING_DOWN
        with pytest.raises(aqueduct.ConnectionLost):
            await held_tx.send("too late")


async def test_serve_drains_on_sigterm(certs: DevCerts) -> None:
    proc = await asyncio.create_subprocess_exec(
        *CLI, "serve", "--echo", "--port", "0", "--grace", "60", "--cert", str(certs.cert), "--key", str(certs.key),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        first = (await guard(proc.stdout.readline())).decode().strip()
        url = "aqueduct://" + first.removeprefix("listening on ")
        async with aqueduct.connect(url, ca=certs.ca, codec=RawCodec()) as conn:
            held_tx, held_rx = aqueduct.channel()
            await conn.entrypoint.send(RawMessage(b"hold", [held_rx]))  # the echo service serves held_rx
            reply_tx, reply_rx = aqueduct.channel()
            await held_tx.send(RawMessage(b"before", [reply_tx]))
            assert (await guard(reply_rx.recv())).data == b"before"  # held_rx is open at the server now
            proc.send_signal(signal.SIGTERM)
            assert (await guard(proc.stdout.readline())).decode().startswith("draining")
            reply_tx, reply_rx = aqueduct.channel()
            await held_tx.send(RawMessage(b"during the drain", [reply_tx]))
            assert (await guard(reply_rx.recv())).data == b"during the drain"
            await held_tx.finish()
            closed = await guard(conn.wait_closed())
            assert closed.error_code == CloseCode.SHUTTING_DOWN
        assert await guard(proc.wait()) == 0
        _, err = await guard(proc.communicate())
        assert b"Traceback" not in err
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_serve_exits_quietly_on_ctrl_c(certs: DevCerts) -> None:
    proc = await asyncio.create_subprocess_exec(
        *CLI, "serve", "--echo", "--port", "0", "--cert", str(certs.cert), "--key", str(certs.key),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, preexec_fn=terminal_sigint,
    )
    try:
        assert proc.stdout is not None
        assert (await guard(proc.stdout.readline())).startswith(b"listening on")
        proc.send_signal(signal.SIGINT)
        _, err = await guard(proc.communicate())
        assert proc.returncode == 130
        assert err == b""
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()

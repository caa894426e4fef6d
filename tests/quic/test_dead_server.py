"""A server that vanished without closing (issue 26 item 14) is noticed at the client's next packet, not at the
idle timeout: the packet meets ICMP port unreachable on the client's connected socket, the client sends a PING
to confirm, the PING meets another, and recv() raises ConnectionLost naming the server. One unreachable followed
by a packet from the server (a stale or forged ICMP) ends nothing (decision OPS-12)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from reliability.hostile import echo_server
from reliability.live import live_server

import aqueduct
from aqueduct.api.codec import RawCodec, RawMessage
from aqueduct.api.connection import link_of
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.endings import UNREACHABLE_CONFIRMATIONS
from aqueduct.quic.settings import TransportSettings

GUARD = 10.0
"""A failure guard well under the idle timeout (30 s), which is how the client noticed before: never a
synchronisation, and the tests assert on the exception, not on time."""


async def echo(conn: aqueduct.Connection[Any]) -> bytes:
    tx, rx = aqueduct.channel()
    await conn.entrypoint.send(RawMessage(b"ping", [tx]))
    reply = await asyncio.wait_for(rx.recv(), GUARD)
    return bytes(reply.data)


async def test_a_killed_server_ends_the_clients_recv_at_its_next_packet(certs: DevCerts) -> None:
    async with live_server(certs, {}) as server:
        async with aqueduct.connect(server.url, ca=certs.ca, codec=RawCodec()) as conn:
            assert await echo(conn) == b"ping"
            server.proc.kill()  # SIGKILL: no CONNECTION_CLOSE, the port simply stops being bound
            await server.proc.wait()
            tx, rx = aqueduct.channel()
            await conn.entrypoint.send(RawMessage(b"after", [tx]))  # the next packet: to a dead port
            with pytest.raises(aqueduct.ConnectionLost,
                               match=rf"the server at 127\.0\.0\.1:{server.port} is gone \(ICMP port unreachable\)"):
                await asyncio.wait_for(rx.recv(), GUARD)
            assert conn.is_closed


async def test_an_idle_client_notices_at_its_next_keepalive(certs: DevCerts) -> None:
    """Nothing to send: the keepalive PING is the next packet (every `keepalive` seconds; 0.5 here)."""
    async with live_server(certs, {}) as server:
        async with aqueduct.connect(server.url, ca=certs.ca, codec=RawCodec(),
                                    settings=TransportSettings(keepalive=0.5)) as conn:
            tx, rx = aqueduct.channel()
            await conn.entrypoint.send(RawMessage(b"", [tx]))  # the echo holds the reply channel open: rx waits
            server.proc.kill()
            await server.proc.wait()
            with pytest.raises(aqueduct.ConnectionLost, match="is gone"):
                await asyncio.wait_for(rx.recv(), GUARD)


async def test_one_unreachable_followed_by_the_servers_answer_ends_nothing(certs: DevCerts) -> None:
    """A stale ICMP (say, for a packet sent before the server restarted): the confirming PING is answered."""
    async with echo_server(certs) as (url, _), aqueduct.connect(url, ca=certs.ca, codec=RawCodec()) as conn:
        protocol = link_of(conn).protocol
        for _ in range(3):
            for _ in range(UNREACHABLE_CONFIRMATIONS - 1):
                protocol.error_received(ConnectionRefusedError())
            assert await echo(conn) == b"ping"  # the server's packets in between reset the count
        assert not conn.is_closed


async def test_unreachables_in_a_row_end_the_connection(certs: DevCerts) -> None:
    async with echo_server(certs) as (url, _), aqueduct.connect(url, ca=certs.ca, codec=RawCodec()) as conn:
        protocol = link_of(conn).protocol
        for _ in range(UNREACHABLE_CONFIRMATIONS):
            protocol.error_received(ConnectionRefusedError())
        closed = await asyncio.wait_for(conn.wait_closed(), GUARD)
        assert closed.reason == f"the server at 127.0.0.1:{url.rpartition(':')[2]} is gone (ICMP port unreachable)"

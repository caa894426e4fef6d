"""A fault while handling one connection's events stays with that connection (issue 26 item 3, the adapter's
part): it is closed with INTERNAL_ERROR, and the other connections of the same server burst (quic/burst.py)
still have their events handled in that burst. Before, the exception escaped the socket's callback: the faulty
connection stayed open and the connections after it in the burst skipped `end_burst`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from reliability.hostile import RawPeer, echo_server, raw_peer

import aqueduct
from aqueduct.api.codec import RawCodec, RawMessage
from aqueduct.api.connection import link_of
from aqueduct.quic.burst import Burst
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.protocol import AqueductProtocol
from aqueduct.wire.channel_id import ENTRYPOINT
from aqueduct.wire.errors import CloseCode
from aqueduct.wire.frames import Message

GUARD = 20.0
"""A failure guard, never a synchronisation."""


def server_side(server: aqueduct.Server[Any], peer: RawPeer) -> AqueductProtocol:
    """The server's protocol of a raw peer's connection (matched by the peer's port)."""
    port = peer._transport.get_extra_info("sockname")[1]  # type: ignore[union-attr]
    (conn,) = [c for c in server.connections if c.peer_address is not None and c.peer_address[1] == port]
    return link_of(conn).protocol


def boom(*_: Any, **__: Any) -> None:
    raise RuntimeError("a bug in handling this connection's events")


@pytest.mark.pure_python  # replaces handle_event on one engine instance
async def test_a_fault_closes_its_connection_and_the_burst_goes_on(certs: DevCerts,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    bursts: list[tuple[list[Any], list[Any]]] = []
    """Each burst closed: the connections that joined it, and those whose end_burst ran."""
    ran: list[Any] = []
    close = Burst.close

    def recording(self: Burst) -> None:
        joined, ran[:] = list(self.joined), []
        try:
            close(self)
        finally:
            bursts.append((joined, list(ran)))

    monkeypatch.setattr(Burst, "close", recording)
    async with echo_server(certs) as (url, server):
        a, b = [await raw_peer(server.address[1], certs) for _ in range(2)]
        for peer in (a, b):
            peer.hello()
        while len(server.connections) < 2 or any(link_of(c).engine.entrypoint is None for c in server.connections):
            await asyncio.sleep(0.01)  # (a poll of a condition: both connections served their headers)
        faulty, other = server_side(server, a), server_side(server, b)
        assert faulty.engine is not None
        faulty.engine.handle_event = boom  # type: ignore[method-assign]
        inner = other.end_burst

        def counted() -> None:
            ran.append(other)
            inner()

        other.end_burst = counted  # type: ignore[method-assign]
        # Both datagrams leave now, in this order, before the loop reads the server's socket: one burst.
        bursts.clear()
        a.frames(a.new_stream(), [Message(ENTRYPOINT, 0, (), b"to the faulty one")])
        b.frames(b.new_stream(), [Message(ENTRYPOINT, 0, (), b"to the other one")])
        ended = await asyncio.wait_for(a.ended, GUARD)
        assert ended.error_code == CloseCode.INTERNAL_ERROR
        assert "RuntimeError" in ended.reason_phrase
        joined, handled = next((j, h) for j, h in bursts if faulty in j)  # the burst of the fault
        assert other in joined, "precondition: both connections' datagrams were read in one burst"
        assert other in handled
        assert not b.is_closed
        # and the server serves on: a new, well-behaved connection does a round trip
        async with aqueduct.connect(url, ca=certs.ca, codec=RawCodec()) as conn:
            tx, rx = aqueduct.channel()
            await conn.entrypoint.send(RawMessage(b"ping", [tx]))
            assert (await asyncio.wait_for(rx.recv(), GUARD)).data == b"ping"


async def test_a_fault_in_what_hears_the_events_closes_the_connection(certs: DevCerts) -> None:
    """The listener above the engine (the API link) raising: the client learns INTERNAL_ERROR, with the reason."""
    async with echo_server(certs) as (url, server):
        async with aqueduct.connect(url, ca=certs.ca, codec=RawCodec()) as conn:
            (served,) = server.connections
            link_of(served).protocol.listener = boom
            tx, _rx = aqueduct.channel()
            await conn.entrypoint.send(RawMessage(b"ping", [tx]))
            closed = await asyncio.wait_for(conn.wait_closed(), GUARD)
            assert closed.error_code == CloseCode.INTERNAL_ERROR
            assert "RuntimeError" in closed.reason

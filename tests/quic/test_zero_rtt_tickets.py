"""0-RTT from `connect` over real connections: the client's ticket store keeps a ticket per server
(name and address), and `conn.zero_rtt` says whether the early data was accepted, on both sides.

Two servers with the same certificate (one name) on two ports are two servers with two ticket keys: a
store keyed by the name alone handed each server the other's ticket, and 0-RTT fell back to a full
handshake every time the client alternated between them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aioquic.tls import SessionTicket

import aqueduct
from aqueduct.bench.clients import WaitableTickets
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.tickets import ClientTicketStore, FileTicketStore
from tests.api.conftest import guard, running


class WaitableFileTickets(FileTicketStore):
    """A FileTicketStore that tells a test when a ticket arrived."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.waitable = WaitableTickets()

    def put(self, server: str, ticket: SessionTicket) -> None:
        super().put(server, ticket)
        self.waitable.arrived.set()


def _arrived(store: ClientTicketStore) -> WaitableTickets:
    return store.waitable if isinstance(store, WaitableFileTickets) else store  # type: ignore[return-value]


async def _server_saw(conn: aqueduct.Connection, seen: list[bool]) -> None:
    async for msg in conn.entrypoint:
        seen.append(conn.zero_rtt)  # (the engine holds 0-RTT work until the handshake completed)
        async with msg["reply"] as reply:
            await reply.send(msg["n"])


async def _call(url: str, certs: DevCerts, store: ClientTicketStore, n: int) -> bool:
    """Connect, one request (sent in 0-RTT when the store has a ticket), wait for the next ticket; zero_rtt."""
    waitable = _arrived(store)
    waitable.arrived.clear()
    async with await guard(aqueduct.connect(url, ca=certs.ca, session_ticket_store=store)) as conn:
        reply_tx, reply_rx = aqueduct.channel()
        await conn.entrypoint.send({"n": n, "reply": reply_tx})
        assert await guard(reply_rx.recv()) == n  # a reply: the handshake has completed
        await guard(waitable.arrived.wait())
        return conn.zero_rtt


@pytest.mark.parametrize("kind", ["memory", "file"])
async def test_two_servers_with_one_certificate_keep_their_own_tickets(
    certs: DevCerts, tmp_path: Path, kind: str
) -> None:
    store: ClientTicketStore = WaitableTickets() if kind == "memory" else WaitableFileTickets(tmp_path / "t.cbor")
    seen_a: list[bool] = []
    seen_b: list[bool] = []

    async def a(conn: aqueduct.Connection) -> None:
        await _server_saw(conn, seen_a)

    async def b(conn: aqueduct.Connection) -> None:
        await _server_saw(conn, seen_b)

    async with running(certs, a) as (url_a, _), running(certs, b) as (url_b, _):
        first = [await _call(url_a, certs, store, 0), await _call(url_b, certs, store, 1)]
        assert first == [False, False]  # no ticket yet: 1-RTT
        alternating = [await _call(url, certs, store, n) for n, url in enumerate([url_a, url_b] * 3)]
    assert alternating == [True] * 6
    assert seen_a == seen_b == [False, True, True, True]


async def test_zero_rtt_is_false_when_the_server_forgot_its_tickets(certs: DevCerts) -> None:
    """A restarted server (a fresh ticket store) refuses the early data: the connection works, zero_rtt False."""
    store = WaitableTickets()
    seen: list[bool] = []

    async def handler(conn: aqueduct.Connection) -> None:
        await _server_saw(conn, seen)

    async with running(certs, handler) as (url, _):
        assert await _call(url, certs, store, 0) is False
        assert await _call(url, certs, store, 1) is True
    port = int(url.rsplit(":", 1)[1])
    restarted: list[bool] = []
    served: list[aqueduct.Connection] = []
    async with aqueduct.serve("127.0.0.1", port, cert=certs.cert, key=certs.key) as server:

        async def accept() -> None:
            async for conn in server:
                served.append(conn)
                await _server_saw(conn, restarted)

        acceptor = asyncio.ensure_future(accept())
        assert await _call(url, certs, store, 2) is False
        assert served[0].zero_rtt is False
        acceptor.cancel()
    assert seen == [False, True] and restarted == [False]

"""0-RTT replay tried for real: an on-path attacker captures a client's first flight (ClientHello and 0-RTT packets)
on loopback and replays it against a live `aqueduct serve` process, before the original (a race it wins), while the
original connection is open, and after it closed, for reusable and single-use tickets. The echo service prints each
connection's delivered entrypoint messages: over all connections, the one message the client sent never runs twice.
What is and is not replay-safe: SECURITY.md, "0-RTT replay"."""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

import aqueduct
from aqueduct.api.codec import RawCodec
from aqueduct.api.connection import link_of
from aqueduct.bench.clients import WaitableTickets
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.settings import TransportSettings

from .conftest import guard, readdress_ticket

ENDED = re.compile(r"ended: (\d+) entrypoint messages")


class Attacker(asyncio.DatagramProtocol):
    """On the path between one client and the server: relays both ways, keeps the client's first flight (every
    datagram it sent before the server's first answer) and can replay it from its own address."""

    def __init__(self, server: tuple[str, int], *, replay_first: bool) -> None:
        self.server = server
        self.replay_first = replay_first
        self.flight: list[bytes] = []
        self.answered = False
        self.client: Any = None
        self.transport: asyncio.DatagramTransport | None = None
        self.upstream: asyncio.DatagramTransport | None = None
        self.own = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.own.bind(("127.0.0.1", 0))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.client = addr
        if not self.answered:
            self.flight.append(data)
            if self.replay_first:  # the copy from the attacker's address reaches the server first
                self.own.sendto(data, self.server)
        assert self.upstream is not None
        self.upstream.sendto(data, self.server)

    def back(self, data: bytes) -> None:
        self.answered = True
        assert self.transport is not None
        self.transport.sendto(data, self.client)

    def replay(self) -> None:
        for data in self.flight:
            self.own.sendto(data, self.server)


class _Upstream(asyncio.DatagramProtocol):
    def __init__(self, attacker: Attacker) -> None:
        self.attacker = attacker

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.attacker.back(data)


@asynccontextmanager
async def serving(certs: DevCerts, *extra: str) -> AsyncIterator[tuple[tuple[str, int], asyncio.subprocess.Process]]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aqueduct", "serve", "--echo", "--port", "0", "--cert", str(certs.cert), "--key",
        str(certs.key), *extra, stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = (await guard(proc.stdout.readline())).decode()
        host, _, port = line.split()[-1].rpartition(":")
        yield (host, int(port)), proc
    finally:
        if proc.returncode is None:
            proc.terminate()
            await proc.wait()


async def delivered(proc: asyncio.subprocess.Process) -> int:
    """Entrypoint messages the server process ran, over every connection it served (read once it has exited)."""
    assert proc.stdout is not None
    proc.send_signal(signal.SIGTERM)  # drain: every connection closes, each one served prints its line
    out = (await guard(proc.stdout.read())).decode()
    await proc.wait()
    return sum(int(n) for n in ENDED.findall(out))


@pytest.mark.parametrize("tickets", ["reusable", "single-use"])
@pytest.mark.parametrize("when", ["while open", "after close"])
async def test_a_replayed_zero_rtt_flight_never_runs_twice(certs: DevCerts, tickets: str, when: str) -> None:
    """Replays that follow the original find its connection (same connection ID: duplicates) or, once it closed,
    a spent ticket (single-use: TLS refuses the early data) or a handshake they cannot complete (reusable: the
    engine holds the early data until the start-up deadline)."""
    async with serving(certs, *TICKETS[tickets]) as (address, proc):
        async with attack(certs, address, replay_first=False) as (attacker, conn):
            reply_tx, reply = aqueduct.channel()
            await conn.entrypoint.send(aqueduct.RawMessage(b"pay once", [reply_tx]))  # in the 0-RTT flight
            assert (await guard(reply.recv())).data == b"pay once"
            if when == "while open":
                for _ in range(5):
                    attacker.replay()
            await conn.close()
            if when == "after close":
                for _ in range(5):
                    attacker.replay()
        assert await delivered(proc) == 1


@pytest.mark.parametrize("tickets", ["reusable", "single-use"])
async def test_a_replay_that_wins_the_race_runs_at_most_once(certs: DevCerts, tickets: str) -> None:
    """The attacker's copy reaches the server before the original: the server's connection for that connection ID
    answers the attacker, so the client's own connection never completes and ends with ConnectionLost. With
    reusable tickets the early message never runs (the replay cannot finish the handshake); with single-use
    tickets the server may run 0-RTT at once, so it runs once, from the attacker's copy, while the client cannot
    know: at most once, never twice, and the client must not blindly resend non-idempotent 0-RTT work."""
    settings = TransportSettings(idle_timeout=1.5, handshake_timeout=1.5)
    async with serving(certs, *TICKETS[tickets]) as (address, proc):
        async with attack(certs, address, replay_first=True, settings=settings) as (attacker, conn):
            reply_tx, reply = aqueduct.channel()
            await conn.entrypoint.send(aqueduct.RawMessage(b"pay once", [reply_tx]))
            with pytest.raises(aqueduct.ConnectionLost):
                await guard(reply.recv())
            assert not attacker.answered
        assert await delivered(proc) == (1 if tickets == "single-use" else 0)


TICKETS = {"reusable": (), "single-use": ("--single-use-tickets",)}


@asynccontextmanager
async def attack(
    certs: DevCerts, address: tuple[str, int], *, replay_first: bool, settings: TransportSettings | None = None
) -> AsyncIterator[tuple[Attacker, aqueduct.Connection[Any]]]:
    """A client holding a ticket connects through the attacker and resumes with 0-RTT."""
    loop = asyncio.get_running_loop()
    store = WaitableTickets()
    async with aqueduct.connect(f"aqueduct://{address[0]}:{address[1]}", ca=certs.ca, codec=RawCodec(),
                                session_ticket_store=store):
        await guard(store.arrived.wait())
    proxy, attacker = await loop.create_datagram_endpoint(
        lambda: Attacker(address, replay_first=replay_first), local_addr=("127.0.0.1", 0))
    upstream, _ = await loop.create_datagram_endpoint(lambda: _Upstream(attacker), local_addr=("127.0.0.1", 0))
    attacker.upstream = upstream
    try:
        phost, pport = proxy.get_extra_info("sockname")[:2]
        readdress_ticket(store, address, (phost, pport))
        conn = await aqueduct.connect(f"aqueduct://{phost}:{pport}", ca=certs.ca, codec=RawCodec(),
                                      session_ticket_store=store, server_name="127.0.0.1", settings=settings)
        assert link_of(conn).protocol.early_data_attempted
        yield attacker, conn
        assert attacker.flight
    finally:
        proxy.close()
        upstream.close()
        attacker.own.close()

"""A connection whose idle deadline passed while its event loop was held up ends there: nothing sent or received
afterwards revives it (RFC 9000 section 10.1; decision QUIC-34).

The stall it reproduces: benchmarks/independent/harness.py's client blocks its event loop in `sys.stdin.readline()`
between rounds while the other systems run theirs. A slow run blocked it past the 30 s idle timeout; the server,
whose loop ran on, closed the connection silently at its deadline. When the client's loop went on, its overdue
keep-alive PING (or the request) was sent before aioquic's overdue timer had looked at the idle deadline, and
aioquic restarts the idle timer on the first ack-eliciting packet sent after a receipt: the client held a connection
the server had forgotten, and `aqueduct.request(..., timeout=10)` raised Timeout in the next round's first row
("request 1") instead of ConnectionLost.

A frozen process is simulated by moving the loop's clock forward in one step (every deadline passes at once, as
when the process gets the CPU back); no test here sleeps or reads the wall clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.protocol import AqueductProtocol
from aqueduct.quic.settings import TransportSettings
from aqueduct.testing.impair import ImpairProxy

GUARD = 10.0
"""Bounds the one request that could hang (the bug: it waited for its own timeout)."""


@dataclass
class Echo:
    data: bytes
    reply: aqueduct.OneshotSender[bytes]


@contextmanager
def movable_clock(loop: asyncio.AbstractEventLoop) -> Iterator[list[float]]:
    """The loop's clock plus an offset the test moves (`offset[0] += s`: the process was frozen for s seconds)."""
    offset = [0.0]
    real = loop.time
    loop.time = lambda: real() + offset[0]  # type: ignore[method-assign]
    try:
        yield offset
    finally:
        del loop.time


class CountingTransport(asyncio.DatagramTransport):
    """Counts the datagrams a protocol hands its transport, and passes them on."""

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self.inner = inner
        self.sent = 0

    def sendto(self, data: Any, addr: Any = None) -> None:
        self.sent += 1
        self.inner.sendto(data, addr)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.inner.get_extra_info(name, default)

    def is_closing(self) -> bool:
        return bool(self.inner.is_closing())

    def close(self) -> None:
        self.inner.close()


@asynccontextmanager
async def echo_server(certs: DevCerts) -> AsyncIterator[tuple[tuple[str, int], list[AqueductProtocol]]]:
    """An echo server for `Echo` requests: its address, and its connections' adapters as they come."""
    adapters: list[AqueductProtocol] = []
    handlers: set[asyncio.Task[None]] = set()

    async def handle(conn: aqueduct.Connection[aqueduct.Receiver[Echo]]) -> None:
        adapters.append(link_of(conn).protocol)
        try:
            async for msg in conn.entrypoint:
                await msg.reply.send(msg.data)
        except aqueduct.ConnectionLost:
            pass

    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, entrypoint=Echo) as server:
        async def accept() -> None:
            async for conn in server:
                handlers.add(asyncio.ensure_future(handle(conn)))

        acceptor = asyncio.ensure_future(accept())
        try:
            yield server.address, adapters
        finally:
            acceptor.cancel()
            for task in handlers:
                task.cancel()


async def test_a_request_after_the_loop_was_frozen_past_the_idle_timeout_raises_connection_lost(
    certs: DevCerts,
) -> None:
    """The harness's stall: requests, the client's loop frozen past the idle timeout while its server closed the
    connection silently at its deadline (here: a proxy that drops everything from then on), then a request. It
    raises ConnectionLost at once, naming the idle timeout, and not one packet leaves after the freeze. Before,
    the overdue keep-alive PING went out first, restarted the client's idle timer, and the request waited for
    its own timeout: Timeout."""
    loop = asyncio.get_running_loop()
    settings = TransportSettings()
    assert settings.keepalive is not None and settings.keepalive < settings.idle_timeout  # (the PING came first)
    with movable_clock(loop) as offset:
        async with echo_server(certs) as (address, _):
            proxy = await ImpairProxy.start(address)
            try:
                async with aqueduct.connect(f"aqueduct://127.0.0.1:{proxy.address[1]}", ca=certs.ca,
                                            entrypoint=Echo, settings=settings) as conn:
                    for _ in range(20):
                        got = await aqueduct.request(conn.entrypoint, lambda r: Echo(b"x" * 64, r), timeout=GUARD)
                        assert got == b"x" * 64
                    protocol = link_of(conn).protocol
                    counting = CountingTransport(protocol.transport)
                    protocol.use_transport(counting)
                    offset[0] += 2 * settings.idle_timeout  # frozen (a blocking read) past every deadline
                    proxy.blackout(10 * settings.idle_timeout)  # the server has forgotten the connection
                    with pytest.raises(aqueduct.ConnectionLost, match="Idle timeout"):
                        await aqueduct.request(conn.entrypoint, lambda r: Echo(b"x" * 64, r), timeout=GUARD)
                    assert counting.sent == 0
                    assert protocol.terminated.done()
            finally:
                proxy.close()


@dataclass
class Frozen:
    """A client connected to an echo server (one request answered), on a loop whose clock the test moves."""

    conn: aqueduct.Connection[aqueduct.Sender[Echo]]
    server_adapters: list[AqueductProtocol]
    offset: list[float]
    settings: TransportSettings


@asynccontextmanager
async def answered_once(certs: DevCerts) -> AsyncIterator[Frozen]:
    """A client whose first request was answered, on a movable clock (default transport settings)."""
    settings = TransportSettings()
    with movable_clock(asyncio.get_running_loop()) as offset:
        async with echo_server(certs) as (address, adapters), \
                aqueduct.connect(f"aqueduct://127.0.0.1:{address[1]}", ca=certs.ca, entrypoint=Echo,
                                 settings=settings) as conn:
            assert await aqueduct.request(conn.entrypoint, lambda r: Echo(b"x", r), timeout=GUARD) == b"x"
            yield Frozen(conn, adapters, offset, settings)


async def test_an_overdue_keepalive_does_not_revive_an_idle_connection(certs: DevCerts) -> None:
    """No request at all: the loop frozen past the idle timeout, then it runs its overdue timers (the keep-alive
    PING among them) until the client's connection has ended: it ends by its idle timeout with nothing sent."""
    async with answered_once(certs) as frozen:
        protocol = link_of(frozen.conn).protocol
        counting = CountingTransport(protocol.transport)
        protocol.use_transport(counting)
        frozen.offset[0] += 2 * frozen.settings.idle_timeout
        ended = await asyncio.wait_for(asyncio.shield(protocol.terminated), GUARD)
        assert ended.reason == "Idle timeout"
        assert counting.sent == 0


async def test_a_packet_after_the_idle_deadline_does_not_revive_the_connection(certs: DevCerts) -> None:
    """The receiving side of the same rule: a datagram handed to a connection whose idle deadline has passed (its
    loop was held up) is dropped and the connection ends by its idle timeout, rather than the packet restarting
    the idle timer of a connection its peer may have forgotten."""
    async with answered_once(certs) as frozen:
        loop, idle = asyncio.get_running_loop(), frozen.settings.idle_timeout
        client = link_of(frozen.conn).protocol
        (server,) = frozen.server_adapters
        frozen.offset[0] += 2 * idle
        # (a PING the client would send: any short-header packet for the server's connection does)
        client.quic.send_ping(0)
        datagrams = client.quic.datagrams_to_send(now=loop.time() - 2 * idle)
        assert datagrams
        transport = client.transport
        assert transport is not None
        for data, _ in datagrams:
            server.datagram_received(data, transport.get_extra_info("sockname"))
        assert server.terminated.done()
        assert server.terminated.result().reason == "Idle timeout"

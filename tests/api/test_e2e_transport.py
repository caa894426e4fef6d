"""End to end over real aioquic: 0-RTT (accepted, rejected, replayed), TLS checks, codecs, limits, violations."""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import Any

import pytest
from aioquic.asyncio.client import connect as raw_connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, QuicEvent
from aioquic.tls import SessionTicket

import aqueduct
from aqueduct import CloseCode, LimitExceeded
from aqueduct.api.connection import CodecMismatch, link_of
from aqueduct.bench.clients import WaitableTickets
from aqueduct.quic.certs import DevCerts, fingerprint
from aqueduct.quic.settings import ALPN, TransportSettings
from aqueduct.wire.frames import ConnectionControl, Version, encode_frames

from .conftest import guard, readdress_ticket, running


def collector() -> tuple[list[Any], asyncio.Queue[Any], Any]:
    seen: list[Any] = []
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def handler(conn: aqueduct.Connection) -> None:
        async for msg in conn.entrypoint:
            seen.append(msg)
            queue.put_nowait(msg)

    return seen, queue, handler


async def _first_ticket(url: str, certs: DevCerts) -> WaitableTickets:
    store = WaitableTickets()
    async with aqueduct.connect(url, ca=certs.ca, session_ticket_store=store):
        await guard(store.arrived.wait())
    return store


@pytest.mark.parametrize("single_use", [False, True])
async def test_zero_rtt_accepted(certs: DevCerts, single_use: bool) -> None:
    seen, queue, handler = collector()
    async with running(certs, handler, single_use_tickets=single_use) as (url, _):
        store = await _first_ticket(url, certs)
        conn = await aqueduct.connect(url, ca=certs.ca, session_ticket_store=store)
        assert link_of(conn).protocol.early_data_attempted
        await conn.entrypoint.send("early")  # leaves in the first flight, before the handshake ends
        handshake = await guard(link_of(conn).protocol.handshake)
        assert handshake.early_data_accepted and handshake.session_resumed
        assert await guard(queue.get()) == "early"
        await conn.close()
        assert seen == ["early"]


async def test_zero_rtt_rejected_delivers_every_early_message_once(certs: DevCerts) -> None:
    seen, queue, handler = collector()
    async with running(certs, handler) as (url_a, server_a):
        store = await _first_ticket(url_a, certs)
        address_a = server_a.address
    # A different server (same name and certificate) does not know the ticket: 0-RTT is rejected.
    async with running(certs, handler) as (url_b, server_b):
        readdress_ticket(store, address_a, server_b.address)
        conn = await aqueduct.connect(url_b, ca=certs.ca, session_ticket_store=store)
        assert link_of(conn).protocol.early_data_attempted
        for i in range(5):
            await conn.entrypoint.send(i)
        handshake = await guard(link_of(conn).protocol.handshake)
        assert not handshake.early_data_accepted
        got = sorted([await guard(queue.get()) for _ in range(5)])
        await conn.entrypoint.send("marker")
        assert await guard(queue.get()) == "marker"
        await conn.close()
    assert sorted(seen[:5]) == got == [0, 1, 2, 3, 4]
    assert len(seen) == 6


class RecordingProxy(asyncio.DatagramProtocol):
    """An on-path attacker: relays one client's UDP datagrams to the server and keeps a copy of each."""

    def __init__(self, server: tuple[str, int]) -> None:
        self.server = server
        self.recorded: list[bytes] = []
        self.client: Any = None
        self.transport: asyncio.DatagramTransport | None = None
        self.upstream: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.client = addr
        self.recorded.append(data)
        assert self.upstream is not None
        self.upstream.sendto(data, self.server)

    def back(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.sendto(data, self.client)


class _Upstream(asyncio.DatagramProtocol):
    def __init__(self, proxy: RecordingProxy) -> None:
        self.proxy = proxy

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.proxy.back(data)


@pytest.mark.parametrize("single_use", [False, True])
async def test_replayed_zero_rtt_flight_is_never_processed_twice(certs: DevCerts, single_use: bool) -> None:
    seen, queue, handler = collector()
    settings = TransportSettings(idle_timeout=1.0, keepalive=None)
    loop = asyncio.get_running_loop()
    async with running(certs, handler, single_use_tickets=single_use, settings=settings) as (url, server):
        store = await _first_ticket(url, certs)
        proxy_transport, proxy = await loop.create_datagram_endpoint(
            lambda: RecordingProxy(server.address), local_addr=("127.0.0.1", 0)
        )
        upstream, _ = await loop.create_datagram_endpoint(lambda: _Upstream(proxy), local_addr=("127.0.0.1", 0))
        proxy.upstream = upstream
        try:
            phost, pport = proxy_transport.get_extra_info("sockname")[:2]
            readdress_ticket(store, server.address, (phost, pport))
            conn = await aqueduct.connect(
                f"aqueduct://{phost}:{pport}", ca=certs.ca, session_ticket_store=store, settings=settings,
                server_name="127.0.0.1",
            )
            assert link_of(conn).protocol.early_data_attempted
            await conn.entrypoint.send("pay once")  # 0-RTT
            assert await guard(queue.get()) == "pay once"
            assert (await guard(link_of(conn).protocol.handshake)).early_data_accepted
            await conn.close()
            while server.connections:
                await guard(next(iter(server.connections)).wait_closed())

            # The attacker replays every datagram the client sent, from another address.
            replayed: asyncio.Future[aqueduct.Connection] = loop.create_future()
            original_on_protocol = server._on_protocol

            def spy(protocol: Any) -> None:
                original_on_protocol(protocol)
                new = [c for c in server.connections if link_of(c).protocol is protocol]
                if new and not replayed.done():
                    replayed.set_result(new[0])

            server._on_protocol = spy  # type: ignore[method-assign]
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                for data in proxy.recorded:
                    sock.sendto(data, server.address)
                victim = await guard(replayed)
                await guard(victim.wait_closed())  # it never completes a handshake; the idle timeout ends it
                # Multi-use tickets: TLS took the replayed 0-RTT data, and only the engine's hold kept it from
                # running. Single-use tickets: the ticket was spent, so TLS refused the early data outright.
                assert link_of(victim).protocol._quic.tls.early_data_accepted is (not single_use)
            finally:
                sock.close()
        finally:
            proxy_transport.close()
            upstream.close()
    assert seen == ["pay once"]


async def test_codec_mismatch_fails_at_connect(certs: DevCerts) -> None:
    _, _, handler = collector()
    async with running(certs, handler) as (url, _):
        with pytest.raises(CodecMismatch, match=r"codec mismatch: the (server|client) uses '(raw|cbor)"):
            await guard(aqueduct.connect(url, ca=certs.ca, codec=aqueduct.RawCodec()))


async def test_certificate_checks(certs: DevCerts, tmp_path: Any) -> None:
    _, queue, handler = collector()
    async with running(certs, handler) as (url, _):
        good = fingerprint(certs.cert.read_bytes())
        async with aqueduct.connect(url, fingerprint=good) as conn:
            await conn.entrypoint.send("pinned")
            assert await guard(queue.get()) == "pinned"
        with pytest.raises(aqueduct.ConnectError, match="fingerprint"):
            await guard(aqueduct.connect(url, fingerprint="00" * 32))
        # Pinning and resumption: the resumed handshake shows no certificate, the ticket vouches for it.
        store = WaitableTickets()
        async with aqueduct.connect(url, fingerprint=good, session_ticket_store=store):
            await guard(store.arrived.wait())
        async with aqueduct.connect(url, fingerprint=good, session_ticket_store=store) as resumed:
            await resumed.entrypoint.send("pinned 0-rtt")
            assert (await guard(link_of(resumed).protocol.handshake)).early_data_accepted
            assert await guard(queue.get()) == "pinned 0-rtt"
        with pytest.raises(aqueduct.ConnectError):  # no CA given: the system store does not know our dev CA
            await guard(aqueduct.connect(url))


async def test_unreliable_message_larger_than_a_datagram_is_refused(certs: DevCerts) -> None:
    _, queue, handler = collector()
    async with running(certs, handler) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        limit = link_of(conn).protocol.datagram_payload_limit
        assert 1000 < limit < 1200
        with pytest.raises(LimitExceeded, match="datagram"):
            await conn.entrypoint.send(b"x" * 2000, mode="unreliable")
        assert not link_of(conn).protocol._quic._datagrams_pending  # refused before aioquic saw it
        await conn.entrypoint.send(b"x" * 2000)  # the same payload is fine on a stream
        assert await guard(queue.get()) == b"x" * 2000


class RawClient(QuicConnectionProtocol):
    """A bare aioquic client that records how the server closed the connection."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.terminated: asyncio.Future[ConnectionTerminated] = asyncio.get_running_loop().create_future()

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, ConnectionTerminated) and not self.terminated.done():
            self.terminated.set_result(event)


async def _raw_close(certs: DevCerts, url: str, datagrams: bool, payload: bytes | None) -> ConnectionTerminated:
    host, port = aqueduct.api.endpoints.parse_url(url)
    config = QuicConfiguration(alpn_protocols=[ALPN], is_client=True, server_name="localhost",
                               verify_mode=ssl.CERT_REQUIRED)
    config.load_verify_locations(cafile=str(certs.ca))
    if datagrams:
        config.max_datagram_frame_size = 65535
    async with raw_connect(host, port, configuration=config, create_protocol=RawClient) as client:
        assert isinstance(client, RawClient)
        if payload is not None:
            client._quic.send_stream_data(0, payload)
            client.transmit()
        return await guard(client.terminated)


@pytest.mark.spec("quic.datagrams")
async def test_peer_without_datagrams_is_closed(certs: DevCerts) -> None:
    _, _, handler = collector()
    async with running(certs, handler) as (url, _):
        event = await _raw_close(certs, url, datagrams=False, payload=None)
    assert event.error_code == CloseCode.DATAGRAMS_UNSUPPORTED


async def test_protocol_violation_closes_with_the_engine_code(certs: DevCerts) -> None:
    _, _, handler = collector()
    async with running(certs, handler) as (url, _):
        bad_version = encode_frames([Version("9.9.9-NOPE"), ConnectionControl(())])
        event = await _raw_close(certs, url, datagrams=True, payload=bad_version)
        assert event.error_code == CloseCode.VERSION_MISMATCH
        assert "9.9.9-NOPE" in event.reason_phrase  # the engine's reason travels in CONNECTION_CLOSE
        garbage = await _raw_close(certs, url, datagrams=True, payload=b"\xff\xfe\xfd\xfc" * 4)
        assert garbage.error_code in (CloseCode.FRAME_ENCODING, CloseCode.PROTOCOL_VIOLATION)


async def test_headers_travel_both_ways(certs: DevCerts) -> None:
    seen: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def handler(conn: aqueduct.Connection) -> None:
        seen.put_nowait(conn.header("app"))

    async with running(certs, handler, headers={"role": "server"}) as (url, _), aqueduct.connect(
        url, ca=certs.ca, headers=[("app", b"demo"), ("app", b"second value")]
    ) as conn:
        assert await guard(seen.get()) == b"demo"
        assert conn.header("role") == b"server"
        assert ("codec", aqueduct.CborCodec.name.encode()) in conn.peer_headers


class SignalingFileStore(aqueduct.FileTicketStore):
    """A file ticket store that says when a ticket was written."""

    def __init__(self, path: Any) -> None:
        super().__init__(path)
        self.arrived = asyncio.Event()

    def put(self, server: str, ticket: SessionTicket) -> None:
        super().put(server, ticket)
        self.arrived.set()


async def test_zero_rtt_with_a_ticket_file(certs: DevCerts, tmp_path: Any) -> None:
    _, queue, handler = collector()
    async with running(certs, handler) as (url, _):
        first = SignalingFileStore(tmp_path / "tickets.cbor")
        async with aqueduct.connect(url, ca=certs.ca, session_ticket_store=first):
            await guard(first.arrived.wait())
        # A new process would open the same file: a fresh store object reads it.
        conn = await aqueduct.connect(url, ca=certs.ca, session_ticket_store=aqueduct.FileTicketStore(first._path))
        await conn.entrypoint.send("from file ticket")
        assert (await guard(link_of(conn).protocol.handshake)).early_data_accepted
        assert await guard(queue.get()) == "from file ticket"
        await conn.close()

"""Helpers for hostile-peer tests: a raw aioquic client speaking our wire codec, the echo server, measurements.

`RawPeer` is a plain aioquic client protocol bound to its own loopback
address (127.0.0.2, so per-address limits never touch the well-behaved
client on 127.0.0.1). It writes whatever frames a test builds, reads
nothing unless asked, and records only how the connection ended.
`footprint(conn)` sums what a server connection holds: engine tables,
queued message bytes, partial frames, and aioquic's stream buffers.
`round_trip(url, ca)` is the well-behaved client: one echo over a reply
channel; it returns the time taken (reported, never asserted).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.quic import events as qe
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection

import aqueduct
from aqueduct.api.codec import RawCodec, RawMessage
from aqueduct.api.connection import link_of
from aqueduct.api.echo import echo_connection
from aqueduct.core.config import EngineConfig
from aqueduct.quic.aioquic_connection import PacedQuicConnection
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.settings import ALPN, TransportSettings
from aqueduct.wire.frames import ConnectionControl, Frame, Version, encode_frames

GUARD = 20.0
"""Longest any single wait may take before the test fails (a failure guard, not a synchronisation)."""
HOSTILE_HOST = "127.0.0.2"

SETTINGS = TransportSettings(
    stream_window=128 * 1024,
    connection_window=512 * 1024,
    send_buffer=128 * 1024,
    connection_send_buffer=512 * 1024,
    idle_timeout=5.0,
    keepalive=1.0,
    handshake_timeout=1.5,
    max_connections_per_address=8,
    max_connections=64,
)
"""Server transport settings of the suite: small windows and limits so attacks reach them quickly."""

ENGINE = EngineConfig(
    max_frame_size=64 * 1024,
    max_channels=256,
    max_pending_receivers=64,
    max_receiver_queue_messages=256,
    max_receiver_queue_bytes=128 * 1024,
    max_buffered_bytes=256 * 1024,
)
"""Server engine limits of the suite."""

BYTES_BOUND = SETTINGS.connection_window + SETTINGS.connection_send_buffer + 128 * 1024
"""What one server connection may hold in bytes: the receive window, the send bound, datagram slack."""


class RawPeer(QuicConnectionProtocol):
    """A misbehaving client: raw frames on raw streams."""

    def __init__(self, quic: QuicConnection, **kwargs: Any) -> None:
        super().__init__(quic, **kwargs)
        self.ended: asyncio.Future[qe.ConnectionTerminated] = asyncio.get_running_loop().create_future()
        self.received_bytes = 0
        self.server_streams: list[int] = []

    def quic_event_received(self, event: qe.QuicEvent) -> None:
        if isinstance(event, qe.StreamDataReceived):
            self.received_bytes += len(event.data)
            if event.stream_id not in self.server_streams and event.stream_id & 1:
                self.server_streams.append(event.stream_id)
        elif isinstance(event, qe.ConnectionTerminated) and not self.ended.done():
            self.ended.set_result(event)

    @property
    def quic(self) -> QuicConnection:
        """The aioquic connection."""
        return self._quic

    def new_stream(self, uni: bool = True) -> int:
        """The next client stream ID of a kind."""
        return self._quic.get_next_available_stream_id(is_unidirectional=uni)

    def write(self, stream_id: int, data: bytes, fin: bool = False) -> None:
        """Write raw bytes on a stream and transmit."""
        self._quic.send_stream_data(stream_id, data, fin)
        self.transmit()

    def frames(self, stream_id: int, frames: list[Frame], fin: bool = False) -> None:
        """Write encoded frames on a stream."""
        self.write(stream_id, encode_frames(frames), fin)

    def hello(self, codec: str = "raw") -> None:
        """Version + ConnectionControl on the connection control stream, as a real client starts."""
        sid = self.new_stream(uni=False)
        assert sid == 0
        self.frames(0, [Version(), ConnectionControl((("codec", codec.encode()),))])

    @property
    def is_closed(self) -> bool:
        """Whether the connection ended."""
        return self.ended.done()


def client_config(certs: DevCerts, **overrides: Any) -> QuicConfiguration:
    """A raw client configuration that passes our server's checks (ALPN, datagrams, TLS)."""
    config = QuicConfiguration(
        is_client=True, alpn_protocols=[ALPN], max_datagram_frame_size=65535, server_name="127.0.0.1", **overrides
    )
    config.load_verify_locations(cafile=str(certs.ca))
    return config


async def raw_peer(
    port: int, certs: DevCerts, *, paced: bool = False, wait: bool = True, **overrides: Any
) -> RawPeer:
    """Open a RawPeer from HOSTILE_HOST; with `paced`, its receive windows never grow (it never reads)."""
    loop = asyncio.get_running_loop()
    config = client_config(certs, **overrides)
    quic = PacedQuicConnection(configuration=config) if paced else QuicConnection(configuration=config)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((HOSTILE_HOST, 0))
    _, peer = await loop.create_datagram_endpoint(lambda: RawPeer(quic), sock=sock)
    peer.connect(("127.0.0.1", port))
    if wait:
        await asyncio.wait_for(peer.wait_connected(), GUARD)
    return peer


@contextlib.asynccontextmanager
async def attack(certs: DevCerts, tracker: PeakTracker, **peer_options: Any) -> AsyncIterator[tuple[str, RawPeer]]:
    """The echo server watched by `tracker` and a raw peer (see `raw_peer`) that said hello; yields (url, peer)."""
    async with echo_server(certs) as (url, server):
        tracker.watch(server)
        peer = await raw_peer(server.address[1], certs, **peer_options)
        peer.hello()
        yield url, peer


@contextlib.asynccontextmanager
async def echo_server(certs: DevCerts, **kwargs: Any) -> AsyncIterator[tuple[str, aqueduct.Server]]:
    """The echo service (raw codec) with the suite's settings; yields (url, server)."""
    kwargs.setdefault("settings", SETTINGS)
    kwargs.setdefault("engine_config", ENGINE)
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, codec=RawCodec(), **kwargs) as server:
        tasks: set[asyncio.Task[int]] = set()

        async def accept() -> None:
            async for conn in server:
                task = asyncio.ensure_future(echo_connection(conn))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

        acceptor = asyncio.ensure_future(accept())
        try:
            yield f"aqueduct://127.0.0.1:{server.address[1]}", server
        finally:
            acceptor.cancel()
            for task in list(tasks):
                task.cancel()


async def round_trip(url: str, certs: DevCerts, payload: bytes = b"ping") -> float:
    """A well-behaved client's echo round trip on a new connection; seconds taken."""
    async with aqueduct.connect(url, ca=certs.ca, codec=RawCodec()) as conn:
        start = time.perf_counter()
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send(RawMessage(payload, [tx]))
        reply = await asyncio.wait_for(rx.recv(), GUARD)
        took = time.perf_counter() - start
        assert reply.data == payload
        return took


def footprint(conn: aqueduct.Connection) -> dict[str, int]:
    """What a server connection holds now (engine tables and bytes; aioquic buffers)."""
    if conn.is_closed:
        return {"closed": 1, "bytes": 0}
    e = link_of(conn).engine
    quic: Any = link_of(conn).protocol.quic
    streams = quic._streams.values()
    out = dict(e.state_sizes())
    out["queued_bytes"] = sum(r.queue_bytes for r in e._receivers.values())
    out["quic_streams"] = len(quic._streams)
    out["quic_recv_buffered"] = sum(len(s.receiver._buffer) for s in streams)
    out["quic_send_buffered"] = sum(len(s.sender._buffer) for s in streams)
    out["datagrams_pending"] = sum(len(d) for d in quic._datagrams_pending)
    out["bytes"] = (out["held_bytes"] + out["queued_bytes"] + out["quic_recv_buffered"] + out["quic_send_buffered"]
                    + out["datagrams_pending"])
    return out


class PeakTracker:
    """Keeps the largest value of each footprint entry over a server's connections, and how they closed."""

    def __init__(self) -> None:
        self.peak: dict[str, int] = {}
        self.closes: list[int] = []
        """Close codes of the server's connections, in the order they ended."""
        self.reasons: list[str] = []
        """Their close reasons, in the same order."""
        self.closed = asyncio.Event()

    def sample(self, conn: aqueduct.Connection) -> None:
        """Record the current footprint of a connection."""
        for k, v in footprint(conn).items():
            self.peak[k] = max(self.peak.get(k, 0), v)

    def watch(self, server: aqueduct.Server) -> None:
        """Sample every server connection after each batch its adapter processes (event-driven, exact)."""
        seen: set[int] = set()
        tracker = self

        def hook(conn: aqueduct.Connection) -> None:
            proto: Any = link_of(conn).protocol
            inner = proto.pump

            def ended(fut: asyncio.Future[Any]) -> None:
                tracker.closes.append(fut.result().error_code)
                tracker.reasons.append(fut.result().reason)
                tracker.closed.set()

            link_of(conn).closed.add_done_callback(ended)

            def pump() -> None:
                inner()
                if proto.engine is not None:
                    tracker.sample(conn)

            proto.pump = pump

        original = server.on_protocol

        def on_protocol(protocol: Any) -> None:
            original(protocol)
            for conn in server.connections:
                if id(conn) not in seen:
                    seen.add(id(conn))
                    hook(conn)

        server.on_protocol = on_protocol  # type: ignore[method-assign]

    async def server_close(self) -> int:
        """Wait until a watched server connection ends; its close code."""
        await asyncio.wait_for(self.closed.wait(), GUARD)
        return self.closes[0]


async def until(predicate: Any, what: str) -> None:
    """Poll a condition the network will make true; fail after GUARD seconds."""
    deadline = time.monotonic() + GUARD
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {GUARD} s: {what}")
        await asyncio.sleep(0.01)

"""The raw aioquic baseline's measuring client: aioquic's public API, length-prefixed frames per stream, or
datagrams, with the same workload methods and backpressure bounds as the other clients (clients.py).

It measures aioquic itself, so it imports aioquic directly (the only module beside peer.py outside
aqueduct/quic/ allowed to); what it must know of aioquic's private state (a stream's unacked bytes, the
datagram queue) it asks quic/introspect.py.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aioquic.asyncio.client import connect as quic_connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.quic import events as qe
from aioquic.quic.configuration import QuicConfiguration
from aioquic.tls import SessionTicket

from ..quic import introspect
from .clients import DATAGRAM_BOUND, SEND_BOUND, Rate
from .framing import Deframer, frame
from .protocol import DATAGRAMS, ECHO, PING, SINK, STREAMS_ECHO, STREAMS_SINK, decode_count
from .settings import RAW_ALPN

STREAMS_BOUND = 128
"""Raw one-stream-per-message sending also waits at this many streams not yet acknowledged: aioquic's default
stream limit, past which its streams queue blocked and every packet walks them all (measured: 256 KiB of 64 B
streams in flight ran at 1/3 the rate)."""


class RawClientProtocol(QuicConnectionProtocol):
    """A raw aioquic client: frames per stream, waiters woken after every transmit."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deframers: dict[int, Deframer] = {}
        self.inbox: dict[int, deque[bytes]] = {}
        self.ended: set[int] = set()
        self._waiters: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []

    def quic_event_received(self, event: qe.QuicEvent) -> None:
        if isinstance(event, qe.StreamDataReceived):
            sid = event.stream_id
            deframer = self.deframers.setdefault(sid, Deframer())
            self.inbox.setdefault(sid, deque()).extend(deframer.feed(event.data))
            if event.end_stream:
                self.ended.add(sid)

    def transmit(self) -> None:
        super().transmit()
        keep = []
        for ready, fut in self._waiters:
            if fut.done():
                continue
            if ready():
                fut.set_result(None)
            else:
                keep.append((ready, fut))
        self._waiters = keep

    async def wait_until(self, ready: Callable[[], bool]) -> None:
        """Wait until `ready()` (checked after each transmit, i.e. after each batch of incoming packets)."""
        while not ready():
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append((ready, fut))
            await fut

    async def next_frame(self, sid: int) -> bytes:
        """The next frame received on `sid`."""
        box = self.inbox.setdefault(sid, deque())
        await self.wait_until(lambda: bool(box) or sid in self.ended)
        return box.popleft()

    def unacked(self, sid: int) -> int:
        """Bytes written to `sid` and not yet acknowledged."""
        return introspect.stream_unacked(introspect.connection_of(self), sid)


class RawQuicClient:
    """Workloads over raw aioquic: a stream per workload with length-prefixed frames, or datagrams, or
    (`per_message`) each message on its own new unidirectional stream, one frame and FIN: what an Aqueduct
    unordered channel puts on the wire."""

    def __init__(self, port: int, ca: Path, datagrams: bool = False, per_message: bool = False) -> None:
        self.port = port
        self.ca = ca
        self.datagrams = datagrams
        self.per_message = per_message
        self._cm: Any = None
        self.proto: RawClientProtocol | None = None
        self.ticket: SessionTicket | None = None

    def _config(self, ticket: SessionTicket | None = None) -> QuicConfiguration:
        config = QuicConfiguration(is_client=True, alpn_protocols=[RAW_ALPN], max_datagram_frame_size=65536,
                                   server_name="localhost", session_ticket=ticket)
        config.load_verify_locations(cafile=str(self.ca))
        return config

    async def open(self) -> None:
        """Connect (1-RTT)."""
        self._cm = quic_connect("127.0.0.1", self.port, configuration=self._config(),
                                create_protocol=RawClientProtocol)
        self.proto = await self._cm.__aenter__()

    async def close(self) -> None:
        """Close the connection."""
        if self._cm is not None:
            await self._cm.__aexit__(None, None, None)

    def _stream(self, cmd: bytes) -> int:
        assert self.proto is not None
        quic = introspect.connection_of(self.proto)
        sid = quic.get_next_available_stream_id()
        quic.send_stream_data(sid, frame(cmd))
        return sid

    async def _end(self, sid: int) -> bytes:
        assert self.proto is not None
        introspect.connection_of(self.proto).send_stream_data(sid, b"", end_stream=True)
        self.proto.transmit()
        return await self.proto.next_frame(sid)

    async def oneway(self, size: int, window: float, limit: int) -> Rate:
        """Stream: length-prefixed messages; datagrams: one message per datagram."""
        if self.datagrams:
            return await self._datagrams(size, window, limit)
        if self.per_message:
            return await self._streams(size, window, limit)
        proto = self.proto
        assert proto is not None
        quic = introspect.connection_of(proto)
        sid = self._stream(SINK)
        payload = b"x" * size
        start = time.perf_counter()
        deadline = start + window
        n = 0
        while n < limit:
            quic.send_stream_data(sid, frame(payload))
            n += 1
            if proto.unacked(sid) >= SEND_BOUND:
                proto.transmit()
                await proto.wait_until(lambda: proto.unacked(sid) < SEND_BOUND)
            if time.perf_counter() >= deadline:
                break
        got = decode_count(await self._end(sid))
        return Rate(got, got * size, time.perf_counter() - start)

    async def _streams(self, size: int, window: float, limit: int) -> Rate:
        """One new unidirectional stream per message; waits while the streams not yet fully acknowledged
        hold SEND_BOUND bytes or more or number STREAMS_BOUND."""
        proto = self.proto
        assert proto is not None
        quic = introspect.connection_of(proto)
        sid = self._stream(STREAMS_SINK)
        proto.transmit()
        data = frame(b"x" * size)
        live = introspect.live_streams(quic)
        in_flight: deque[int] = deque()
        held = 0

        def below(bound: int, streams: int) -> Callable[[], bool]:
            def check() -> bool:
                nonlocal held
                while in_flight and in_flight[0] not in live:
                    in_flight.popleft()
                    held -= len(data)
                return held < bound and len(in_flight) < streams
            return check

        below_bound = below(SEND_BOUND, STREAMS_BOUND)
        start = time.perf_counter()
        deadline = start + window
        n = 0
        while n < limit:
            s = quic.get_next_available_stream_id(is_unidirectional=True)
            quic.send_stream_data(s, data, end_stream=True)
            in_flight.append(s)
            held += len(data)
            n += 1
            if (held >= SEND_BOUND or len(in_flight) >= STREAMS_BOUND) and not below_bound():
                proto.transmit()
                await proto.wait_until(below_bound)
            if time.perf_counter() >= deadline:
                break
        # streams are not ordered with each other: the command's end could overtake messages still queued,
        # so it goes once every message stream is acknowledged (the peer has counted it)
        proto.transmit()
        await proto.wait_until(below(1, 1))
        got = decode_count(await self._end(sid))
        return Rate(got, got * size, time.perf_counter() - start)

    async def _datagrams(self, size: int, window: float, limit: int) -> Rate:
        proto = self.proto
        assert proto is not None
        quic = introspect.connection_of(proto)
        sid = self._stream(DATAGRAMS)
        proto.transmit()
        payload = b"x" * size
        start = time.perf_counter()
        deadline = start + window
        n = 0
        pending = introspect.datagrams_pending(quic)
        while n < limit:
            quic.send_datagram_frame(payload)
            n += 1
            if len(pending) >= DATAGRAM_BOUND:
                proto.transmit()
                await proto.wait_until(lambda: len(pending) < DATAGRAM_BOUND)
            if time.perf_counter() >= deadline:
                break
        got = decode_count(await self._end(sid))
        return Rate(got, got * size, time.perf_counter() - start)

    async def rtt(self, size: int, window: float, limit: int) -> list[float]:
        """Round trips of one frame at a time on an echo stream (`per_message`: each request on a new stream)."""
        proto = self.proto
        assert proto is not None
        quic = introspect.connection_of(proto)
        sid = self._stream(STREAMS_ECHO if self.per_message else ECHO)
        data = frame(b"x" * size)
        out: list[float] = []
        deadline = time.perf_counter() + window
        while len(out) < limit:
            t0 = time.perf_counter()
            if self.per_message:  # the request on its own new stream, the echo back on the command's
                quic.send_stream_data(quic.get_next_available_stream_id(is_unidirectional=True), data, True)
            else:
                quic.send_stream_data(sid, data)
            proto.transmit()
            await proto.next_frame(sid)
            t1 = time.perf_counter()
            out.append(t1 - t0)
            if t1 >= deadline:
                break
        quic.send_stream_data(sid, b"", end_stream=True)
        proto.transmit()
        return out

    async def setup(self, zero_rtt: bool) -> tuple[float, bool]:
        """Seconds from connect to the first echo; whether 0-RTT was accepted."""
        arrived = asyncio.Event()

        def on_ticket(ticket: SessionTicket) -> None:
            self.ticket = ticket
            arrived.set()

        ticket, self.ticket = (self.ticket, None) if zero_rtt else (None, None)
        start = time.perf_counter()
        async with quic_connect("127.0.0.1", self.port, configuration=self._config(ticket),
                                create_protocol=RawClientProtocol, session_ticket_handler=on_ticket,
                                wait_connected=not zero_rtt) as proto:
            assert isinstance(proto, RawClientProtocol)
            quic = introspect.connection_of(proto)
            sid = quic.get_next_available_stream_id()
            quic.send_stream_data(sid, frame(PING), end_stream=True)
            proto.transmit()
            await proto.next_frame(sid)
            took = time.perf_counter() - start
            accepted = bool(quic.tls.early_data_accepted)
            await asyncio.wait_for(arrived.wait(), 5)
        return took, accepted


async def open_connection(port: int, ca: Path, idle_timeout: float) -> Callable[[], Awaitable[None]]:
    """A raw aioquic connection to the peer on `port` (handshake complete); returns its close."""
    config = QuicConfiguration(is_client=True, alpn_protocols=[RAW_ALPN], max_datagram_frame_size=65536,
                               server_name="localhost", idle_timeout=idle_timeout)
    config.load_verify_locations(cafile=str(ca))
    cm = quic_connect("127.0.0.1", port, configuration=config, create_protocol=RawClientProtocol)
    await cm.__aenter__()

    async def close() -> None:
        await cm.__aexit__(None, None, None)
    return close

"""Measuring clients, one per transport family, all with the same workload methods (the raw aioquic one is
rawquic.py's; an extra's, e.g. Marlin Stream's, its own: extras.py).

Each client talks to the peer process (peer.py) with the commands of
protocol.py. Throughput workloads send for a time window (or up to a
message limit), end the carrier, and take the peer's count: rate = count /
(time from the first send to the count's arrival). Every sender applies
backpressure at the same bound (256 KiB unacknowledged per stream, 64
queued datagrams), as each transport's users would.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aioquic.tls import SessionTicket

import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.core.app import Delivery

from ..quic.settings import TransportSettings
from .framing import Deframer, frame
from .protocol import (
    CHANNELS,
    ECHO,
    HOLD,
    PING,
    REQUEST,
    SINK,
    TYPED_CHANNELS,
    TYPED_SINK,
    decode_count,
    pack,
    unpack,
)
from .settings import bench_settings
from .typed import BenchCarrier, BenchOrder, sample_order

SEND_BOUND = 256 * 1024
DATAGRAM_BOUND = 64


@dataclass
class Rate:
    """What a throughput workload measured."""

    messages: int
    nbytes: int
    seconds: float


class WaitableTickets(aqueduct.MemoryTicketStore):
    """Client tickets in memory, plus an event for "a new ticket arrived"."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = asyncio.Event()

    def put(self, server: str, ticket: SessionTicket) -> None:
        super().put(server, ticket)
        self.arrived.set()


# ---------------------------------------------------------------- Aqueduct


class AqueductClient:
    """Workloads over one Aqueduct connection with one codec and one delivery mode."""

    def __init__(self, port: int, ca: Path, codec: str, mode: Delivery, tuned: bool = False,
                 typed: bool = False, settings: TransportSettings | None = None) -> None:
        self.url = f"aqueduct://127.0.0.1:{port}"
        self.ca = ca
        self.codec = codec
        self.mode = mode
        self.settings = settings or bench_settings(tuned)
        self.conn: aqueduct.Connection[Any] | None = None
        self.tickets = WaitableTickets()
        self.typed = typed
        """Typed rows: messages are BenchOrder / BenchCarrier values, checked on send and converted on arrival."""

    def _codec(self) -> aqueduct.Codec:
        return aqueduct.RawCodec() if self.codec == "raw" else aqueduct.CborCodec()

    async def open(self) -> None:
        """Connect (1-RTT)."""
        self.conn = await aqueduct.connect(self.url, ca=self.ca, codec=self._codec(), settings=self.settings)

    async def close(self) -> None:
        """Close the connection."""
        if self.conn is not None:
            await self.conn.close()

    async def _command(
        self, cmd: bytes, mode: Delivery, message_type: Any = None
    ) -> tuple[aqueduct.Sender[Any], aqueduct.Receiver[Any]]:
        assert self.conn is not None
        tx, rx = aqueduct.channel(message_type, mode) if message_type is not None else aqueduct.channel(mode)
        reply_tx, reply_rx = aqueduct.channel()
        await self.conn.entrypoint.send(pack(self.codec, cmd, [rx, reply_tx]))
        return tx, reply_rx

    async def _count(self, reply: aqueduct.Receiver[Any]) -> bytes:
        return unpack(self.codec, await reply.recv())[0]

    async def oneway(self, size: int, window: float, limit: int) -> Rate:
        """Send `size`-byte messages for `window` seconds; the peer counts what arrived.

        Typed rows send `sample_order()` (a 3-field message, 53 bytes of CBOR) whatever `size` says."""
        if self.typed:
            tx, reply = await self._command(TYPED_SINK, self.mode, BenchOrder)
            payload: Any = sample_order()
        else:
            tx, reply = await self._command(SINK, self.mode)
            payload = pack(self.codec, b"x" * size)
        send = tx.send
        start = time.perf_counter()
        deadline = start + window
        n = 0
        while n < limit:
            await send(payload)
            n += 1
            if time.perf_counter() >= deadline:
                break
        await tx.finish()
        got = decode_count(await self._count(reply))
        return Rate(got, got * size, time.perf_counter() - start)

    async def rtt(self, size: int, window: float, limit: int) -> list[float]:
        """Round trips of one message at a time (seconds each)."""
        tx, rx = await self._command(ECHO, self.mode)
        payload = pack(self.codec, b"x" * size)
        out: list[float] = []
        deadline = time.perf_counter() + window
        while len(out) < limit:
            t0 = time.perf_counter()
            await tx.send(payload)
            await rx.recv()
            t1 = time.perf_counter()
            out.append(t1 - t0)
            if t1 >= deadline:
                break
        await tx.finish()
        with contextlib.suppress(aqueduct.ChannelFinished):
            await rx.recv()
        return out

    async def call(self, body: bytes) -> bytes:
        """One request with a fresh oneshot for its reply (`aqueduct.request`); the peer sends `body` back."""
        assert self.conn is not None
        codec = self.codec
        reply: Any = await aqueduct.request(self.conn.entrypoint, lambda r: pack(codec, REQUEST + body, [r]))
        return unpack(codec, reply)[0]

    async def echo_pair(self) -> tuple[aqueduct.Sender[Any], aqueduct.Receiver[Any]]:
        """A pre-opened channel pair: what is sent on the Sender comes back, in order, on the Receiver."""
        return await self._command(ECHO, self.mode)

    async def channels(self, window: float, limit: int) -> Rate:
        """Each message carries a new channel's Receiver; that channel carries one message and finishes."""
        if self.typed:
            return await self._typed_channels(window, limit)
        tx, reply = await self._command(CHANNELS, self.mode)
        start = time.perf_counter()
        deadline = start + window
        n = 0
        one = pack(self.codec, b"x")
        while n < limit:
            ctx, crx = aqueduct.channel()
            await tx.send(pack(self.codec, b"", [crx]))
            await ctx.send(one)
            await ctx.finish()
            n += 1
            if time.perf_counter() >= deadline:
                break
        await tx.finish()
        got = decode_count(await self._count(reply))
        return Rate(got, 0, time.perf_counter() - start)

    async def _typed_channels(self, window: float, limit: int) -> Rate:
        """`channels` with typed messages: each a BenchCarrier whose typed Receiver gets one BenchOrder."""
        tx, reply = await self._command(TYPED_CHANNELS, self.mode, BenchCarrier)
        start = time.perf_counter()
        deadline = start + window
        n = 0
        order = sample_order()
        while n < limit:
            ctx, crx = aqueduct.channel(BenchOrder)
            await tx.send(BenchCarrier(n, crx))
            await ctx.send(order)
            await ctx.finish()
            n += 1
            if time.perf_counter() >= deadline:
                break
        await tx.finish()
        got = decode_count(await self._count(reply))
        return Rate(got, 0, time.perf_counter() - start)

    async def hold(self, count: int) -> tuple[int, int, int]:
        """Open `count` idle channels; (channels, client bytes traced, peer bytes traced) for them."""
        import gc
        import tracemalloc

        tx, reply = await self._command(HOLD, Delivery.ORDERED)
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        kept = []
        for _ in range(count):
            ctx, crx = aqueduct.channel()
            await tx.send(pack(self.codec, b"", [crx]))
            kept.append(ctx)
        await tx.finish()
        answer = await self._count(reply)
        gc.collect()
        ours = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        kept.clear()
        return decode_count(answer[:8]), ours, decode_count(answer[8:16])

    async def setup(self, zero_rtt: bool) -> tuple[float, bool]:
        """Seconds from connect() to the first echo on a new connection; whether 0-RTT was accepted."""
        tickets = self.tickets if zero_rtt else None
        if tickets is not None:
            tickets.arrived.clear()
        start = time.perf_counter()
        conn = await aqueduct.connect(self.url, ca=self.ca, codec=self._codec(), settings=self.settings,
                                      session_ticket_store=tickets)
        reply_tx, reply_rx = aqueduct.channel()
        await conn.entrypoint.send(pack(self.codec, PING, [reply_tx]))
        await reply_rx.recv()
        took = time.perf_counter() - start
        handshake = await link_of(conn).protocol.handshake
        if tickets is not None:
            await asyncio.wait_for(tickets.arrived.wait(), 5)
        await conn.close()
        return took, bool(handshake.early_data_accepted)


# ---------------------------------------------------------------- TCP


class TcpClient:
    """Workloads over asyncio TCP streams (one connection per workload), the same framing."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def open(self) -> None:
        """Nothing to do: each workload opens its own connection."""

    async def close(self) -> None:
        """Nothing to do."""

    async def _conn(self, cmd: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(frame(cmd))
        return reader, writer

    @staticmethod
    async def _frame(reader: asyncio.StreamReader, deframer: Deframer, box: deque[bytes]) -> bytes:
        while not box:
            data = await reader.read(256 * 1024)
            if not data:
                raise ConnectionError("peer closed")
            box.extend(deframer.feed(data))
        return box.popleft()

    async def oneway(self, size: int, window: float, limit: int) -> Rate:
        """Length-prefixed messages, then a half-close; the peer replies the count."""
        reader, writer = await self._conn(SINK)
        payload = b"x" * size
        start = time.perf_counter()
        deadline = start + window
        n = 0
        while n < limit:
            writer.write(frame(payload))
            n += 1
            if writer.transport.get_write_buffer_size() >= SEND_BOUND:
                await writer.drain()
            if time.perf_counter() >= deadline:
                break
        writer.write_eof()
        got = decode_count(await self._frame(reader, Deframer(), deque()))
        writer.close()
        return Rate(got, got * size, time.perf_counter() - start)

    async def rtt(self, size: int, window: float, limit: int) -> list[float]:
        """Round trips of one frame at a time."""
        reader, writer = await self._conn(ECHO)
        data = frame(b"x" * size)
        deframer, box = Deframer(), deque[bytes]()
        out: list[float] = []
        deadline = time.perf_counter() + window
        while len(out) < limit:
            t0 = time.perf_counter()
            writer.write(data)
            await self._frame(reader, deframer, box)
            t1 = time.perf_counter()
            out.append(t1 - t0)
            if t1 >= deadline:
                break
        writer.close()
        return out

    async def setup(self, zero_rtt: bool) -> tuple[float, bool]:
        """Seconds from connect to the first echo (TCP has no 0-RTT here: no TLS, no Fast Open)."""
        start = time.perf_counter()
        reader, writer = await self._conn(PING)
        await self._frame(reader, Deframer(), deque())
        took = time.perf_counter() - start
        writer.close()
        return took, False


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of `values`, nearest-rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def median(values: list[float]) -> float:
    """The median (0.0 for no values)."""
    return statistics.median(values) if values else 0.0

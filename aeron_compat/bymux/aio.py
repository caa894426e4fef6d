"""bymux over any asyncio byte stream (TCP, TLS, a Unix socket).

Theory of operation: one task reads the transport and feeds the sans-I/O
`Endpoint` at once, never waiting for the application (the spec requires
that incoming data is always handled immediately); received bytes go to the
stream's buffer, which credit keeps within `window`. Another task moves
`Endpoint.data_to_send` to the transport in batches of about `batch` bytes,
awaiting `drain()` between batches, so a ping or pong queued meanwhile leaves
ahead of the next batch of bulk data. Application calls only change the
endpoint and wake those tasks; protocol decisions stay in the endpoint.
Credit is restored after reads by the Appendix B rule (`credit.restore_amount`),
stream credit per stream and global credit (`max_streams` peer-created streams
at a time) as the peer's streams end. Waiters wake on a per-stream pulse and
re-check their condition. Endpoint events are handled right after every
endpoint call that can raise them, so none is stale at an await point.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

from .buffered import BufferedStream, StreamAcceptor
from .credit import INFINITE, restore_amount
from .endpoint import DEFAULT_MAX_PACKET_SIZE, Endpoint
from .errors import BymuxError, ConnectionLost, ConnectionTerminated, StreamStopped, UsageError
from .events import (
    CloseReceived,
    CreditReceived,
    DataReceived,
    Event,
    PongReceived,
    StopReadReceived,
    StreamEnded,
    StreamOpened,
)
from .pulse import Pulse

DEFAULT_WINDOW = 256 * 1024
DEFAULT_MAX_STREAMS = 64
_READ_SIZE = 64 * 1024


class Stream(BufferedStream):
    """A bymux stream on an asyncio connection (satisfies `interface.ByteStream`)."""

    _conn: Connection

    def __init__(self, conn: Connection, stream_id: int) -> None:
        super().__init__(stream_id)
        self._conn = conn
        self._stopped = False
        self._ended = False

    async def _restore_credit(self) -> None:
        self._conn._restore_credit(self)

    async def write(self, data: bytes) -> None:
        """Send `data`, in pieces as credit and the send queue allow."""
        conn = self._conn
        ep = conn.endpoint
        view = memoryview(data)
        while view:
            await self._pulse.wait_for(lambda: self._writable() is not None)
            room = self._writable()
            if isinstance(room, BymuxError):
                raise room
            assert room is not None
            n = min(len(view), room)
            ep.write(self.stream_id, bytes(view[:n]))
            view = view[n:]
            conn._kick()

    def _writable(self) -> int | BymuxError | None:
        """How many bytes may be queued now, an error, or None to wait."""
        conn = self._conn
        if conn.lost is not None:
            return conn.lost
        if self._stopped or self._ended or not conn.endpoint.is_active(self.stream_id):
            return StreamStopped(f"stream {self.stream_id} no longer takes writes")
        state = conn.endpoint.stream(self.stream_id)
        if state.sent_close or state.close_pending:
            return StreamStopped(f"stream {self.stream_id} was closed")
        room = conn.queue_limit - state.queued
        credit = state.send_credit if state.send_credit != INFINITE else room
        free = min(room, credit)
        return free if free > 0 else None

    async def ping(self) -> float:
        """Round-trip time, in seconds, of a ping on this stream."""
        conn = self._conn
        if conn.lost is not None:
            raise conn.lost
        if self._ended or not conn.endpoint.is_active(self.stream_id):
            raise StreamStopped(f"stream {self.stream_id} has ended")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[float] = loop.create_future()
        try:
            conn.endpoint.ping(self.stream_id)
        except UsageError:
            raise StreamStopped(f"stream {self.stream_id}: closed and stopped reading") from None
        self._pings.append((loop.time(), fut))
        conn._kick()
        return await fut

    async def close(self) -> None:
        """Write no more; queued data still goes out first. Idempotent."""
        conn = self._conn
        if conn.lost is None and conn.endpoint.is_active(self.stream_id):
            state = conn.endpoint.stream(self.stream_id)
            if not (state.sent_close or state.close_pending):
                conn.endpoint.close(self.stream_id)
                conn._kick()
        self._pulse.fire()

    async def stop_read(self) -> None:
        """Read no more: drop buffered data, tell the peer. Idempotent."""
        conn = self._conn
        self._buffer.clear()
        self._eof = True
        if conn.lost is None and conn.endpoint.is_active(self.stream_id):
            if not conn.endpoint.stream(self.stream_id).sent_stop_read:
                conn.endpoint.stop_read(self.stream_id)
                conn._handle_events()
                conn._kick()
        self._pulse.fire()


class Connection(StreamAcceptor[Stream]):
    """A bymux connection over an asyncio reader/writer (satisfies `interface.StreamConnection`)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        endpoint: Endpoint,
        *,
        window: int,
        max_streams: int,
        batch: int,
    ) -> None:
        self.endpoint = endpoint
        self.window = window
        self.max_streams = max_streams
        self.batch = batch
        self.queue_limit = 4 * endpoint.max_packet_size
        self.lost: ConnectionLost | None = None
        self.max_buffered = 0
        self._reader = reader
        self._writer = writer
        self._streams: dict[int, Stream] = {}
        self._accepted: deque[Stream] = deque()
        self._pulse = Pulse()
        self._send_wake = asyncio.Event()
        endpoint.give_global_credit(max_streams)
        self._tasks = [
            asyncio.create_task(self._receive_loop(), name="bymux-receive"),
            asyncio.create_task(self._send_loop(), name="bymux-send"),
        ]

    @property
    def buffered_bytes(self) -> int:
        """Bytes held for this connection: read buffers, the endpoint's queues, the transport's write buffer."""
        transport = self._writer.transport.get_write_buffer_size()
        return sum(s.buffered for s in self._streams.values()) + self.endpoint.buffered_bytes + transport

    async def open_stream(self) -> Stream:
        """Create a stream, waiting for global credit."""
        ep = self.endpoint
        await self._pulse.wait_for(lambda: self.lost is not None or ep.glob.send_credit > 0 or ep.glob.sent_close)
        if self.lost is not None:
            raise self.lost
        if ep.glob.sent_close:
            raise ConnectionLost("the connection creates no more streams")
        stream = self._adopt(ep.open_stream())
        ep.give_credit(stream.stream_id, self.window)
        self._kick()
        return stream

    def _peer_finished(self) -> bool:
        return self.endpoint.glob.received_close

    async def close(self) -> None:
        """Send what is queued, then close the transport; pending calls get ConnectionLost."""
        if self.lost is None:
            with contextlib.suppress(ConnectionError, OSError):
                self._writer.write(self.endpoint.data_to_send())
            self._lose(ConnectionLost("connection closed locally"))
        for task in self._tasks:
            task.cancel()
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()

    # ----------------------------------------------------------- internals

    def _adopt(self, stream_id: int) -> Stream:
        stream = Stream(self, stream_id)
        self._streams[stream_id] = stream
        return stream

    def _kick(self) -> None:
        self._send_wake.set()

    def _restore_credit(self, stream: Stream) -> None:
        ep = self.endpoint
        if self.lost is not None or not ep.is_active(stream.stream_id):
            return
        state = ep.stream(stream.stream_id)
        if state.sent_stop_read:
            return
        grant = restore_amount(self.window, stream.buffered, state.recv_credit)
        if grant:
            ep.give_credit(stream.stream_id, grant)
            self._kick()

    def _restore_global_credit(self) -> None:
        ep = self.endpoint
        if ep.glob.sent_stop_read:
            return
        theirs = sum(1 for sid in ep.stream_ids if sid % 2 != (0 if ep.initiator else 1))
        grant = restore_amount(self.max_streams, theirs, ep.glob.recv_credit)
        if grant:
            ep.give_global_credit(grant)

    def _lose(self, error: ConnectionLost) -> None:
        if self.lost is not None:
            return
        self.lost = error
        self._send_wake.set()
        self._writer.close()
        for stream in self._streams.values():
            stream._fail_pings(error)
            stream._pulse.fire()
        self._pulse.fire()

    async def _receive_loop(self) -> None:
        try:
            while True:
                data = await self._reader.read(_READ_SIZE)
                if not data:
                    self._lose(ConnectionLost("the peer closed the byte stream"))
                    return
                try:
                    self.endpoint.receive_data(data)
                finally:
                    self._handle_events()
                self.max_buffered = max(self.max_buffered, self.buffered_bytes)
                self._kick()
        except ConnectionTerminated as exc:
            self._lose(exc)
        except (ConnectionError, OSError) as exc:
            self._lose(ConnectionLost(f"transport failed: {exc!r}"))

    async def _send_loop(self) -> None:
        try:
            while self.lost is None:
                data = self.endpoint.data_to_send(self.batch)
                if not data:
                    await self._send_wake.wait()
                    self._send_wake.clear()
                    continue
                self._writer.write(data)
                self.max_buffered = max(self.max_buffered, self.buffered_bytes)
                self._handle_events()
                for stream in list(self._streams.values()):
                    stream._pulse.fire()
                await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            self._lose(ConnectionLost(f"transport failed: {exc!r}"))

    def _handle_events(self) -> None:
        while (event := self.endpoint.next_event()) is not None:
            self._on_event(event)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, StreamOpened):
            stream = self._adopt(event.stream_id)
            self.endpoint.give_credit(event.stream_id, self.window)
            self._accepted.append(stream)
            self._pulse.fire()
            return
        if event.stream_id is None:
            self._pulse.fire()
            return
        stream = self._streams[event.stream_id]
        if isinstance(event, DataReceived):
            if not stream._eof:
                stream._buffer += event.data
        elif isinstance(event, PongReceived):
            stream._resolve_ping()
        elif isinstance(event, CloseReceived):
            stream._eof = True
        elif isinstance(event, StopReadReceived):
            stream._stopped = True
        elif isinstance(event, StreamEnded):
            stream._ended = True
            stream._eof = True
            del self._streams[event.stream_id]
            stream._fail_pings(StreamStopped(f"stream {event.stream_id} ended before the pong"))
            self._restore_global_credit()
        else:
            assert isinstance(event, CreditReceived)
        stream._pulse.fire()


async def open_connection(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    initiator: bool,
    window: int = DEFAULT_WINDOW,
    max_streams: int = DEFAULT_MAX_STREAMS,
    max_packet_size: int = DEFAULT_MAX_PACKET_SIZE,
    batch: int = 2 * DEFAULT_MAX_PACKET_SIZE,
) -> Connection:
    """Run vanilla bymux (no streams, zero credit at the start) over `reader`/`writer`.

    `window` bounds what each stream buffers for reading, `max_streams` how
    many streams the peer may have open at once; both sides must agree on
    who is the `initiator`.
    """
    if window < 1 or max_streams < 1:
        raise ValueError("window and max_streams must be positive")
    endpoint = Endpoint(initiator, max_packet_size=max_packet_size)
    return Connection(reader, writer, endpoint, window=window, max_streams=max_streams, batch=batch)

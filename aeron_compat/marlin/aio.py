"""asyncio adapter for the sans-I/O Stream endpoint: a UDP socket, a timer, and reader/writer pairs.

Theory: one `StreamEndpoint` owns one datagram socket and one `Endpoint`.
Every received datagram, timer expiry and application write ends in `_kick`,
which drains engine events (waking readers, writers, accept queues), sends
what the engine emits and re-arms a single timer at the engine's next
deadline. Each stream is an `asyncio.StreamReader` plus a `StreamWriter`
(write/drain/write_eof/close, like asyncio's). Received bytes move from the
engine into the reader only while the reader is not paused (the reader
pauses its "transport" above its limit), so a slow reader leaves bytes in the
engine, whose receive window then refuses more: end-to-end backpressure.
A stream's handle leaves its connection's table once its reader has the EOF
and its writer nothing left to hand the engine (the engine has let go of the
stream's received half by then); a later write puts it back while bytes wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
from dataclasses import dataclass, field

from aeron_compat.marlin.connection import (
    Address,
    AllAcked,
    Closed,
    Connection,
    Established,
    Readable,
    StreamOpened,
    Writable,
)
from aeron_compat.marlin.endpoint import Endpoint
from aeron_compat.marlin.errors import StreamError
from aeron_compat.marlin.limits import StreamConfig
from aeron_compat.marlin.openweaver import OpenWeaverKeys
from aeron_compat.marlin.packets import Profile

READER_LIMIT = 1 << 20
SOCKET_BUFFER = 4 << 20  # asked of the kernel (capped by net.core.rmem_max / wmem_max)
RECV_BATCH = 256  # datagrams read per wake-up beyond the one asyncio read
RECV_SIZE = 65536


def _now(loop: asyncio.AbstractEventLoop) -> int:
    return int(loop.time() * 1e9)


class _ReadGate(asyncio.ReadTransport):
    """The reader's view of its "transport": pausing stops moving engine bytes into the reader."""

    def __init__(self, stream: StreamHandle) -> None:
        super().__init__()
        self._stream = stream
        self.paused = False

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False
        # soon, not now: StreamReader resumes before it creates the waiter that data must wake
        # (readexactly beyond the pause limit), as a socket transport would deliver data later too
        self._stream.conn.endpoint.loop.call_soon(self._stream.pull)

    def is_reading(self) -> bool:
        return not self.paused


class _WriteGate:
    """What `writer.transport` answers: bytes written but not yet sent."""

    def __init__(self, handle: StreamHandle) -> None:
        self._h = handle

    def get_write_buffer_size(self) -> int:
        return len(self._h.pending)

    def is_closing(self) -> bool:
        return self._h.fin or self._h.conn.closed.is_set()


class StreamWriter:
    """The sending half of one stream (asyncio.StreamWriter's write/drain/write_eof/close/transport)."""

    def __init__(self, handle: StreamHandle) -> None:
        self._h = handle
        self.transport = _WriteGate(handle)

    def write(self, data: bytes) -> None:
        """Queue bytes (held locally while the engine's send buffer is full)."""
        self._h.pending += data
        self._h.push()

    def write_eof(self) -> None:
        """Send the FIN after everything written."""
        self._h.fin = True
        self._h.push()

    async def drain(self) -> None:
        """Wait until the bytes written so far have entered the engine's send buffer."""
        while self._h.pending or (self._h.fin and not self._h.fin_queued):
            self._h.conn.check()
            await self._h.conn.writable.wait()
            self._h.conn.writable.clear()
            self._h.push()
        self._h.conn.check()

    async def flushed(self) -> None:
        """Wait until the peer acknowledged every byte written on the connection (woken by the ACK that
        settles the last one); raises the connection's error if it ended with bytes unacknowledged."""
        await self.drain()
        conn = self._h.conn
        while not conn.engine.all_sent():
            conn.check()
            conn.acked.clear()
            await conn.acked.wait()

    def close(self) -> None:
        """End the stream (FIN after what was written)."""
        if not self._h.fin and not self._h.conn.closed.is_set():
            self.write_eof()

    async def wait_closed(self) -> None:
        await self.drain()


@dataclass(eq=False)
class StreamHandle:
    """One stream's adapter state."""

    conn: StreamConnection
    stream_id: int
    reader: asyncio.StreamReader = field(init=False)
    writer: StreamWriter = field(init=False)
    pending: bytearray = field(default_factory=bytearray)
    fin: bool = False
    fin_queued: bool = False
    taken: bool = False  # handed to the application (opened, or returned by accept_stream)
    eof_fed: bool = False  # the engine's received half ended and the reader has the EOF

    def __post_init__(self) -> None:
        self.reader = asyncio.StreamReader(limit=READER_LIMIT)
        self.gate = _ReadGate(self)
        self.reader.set_transport(self.gate)
        self.writer = StreamWriter(self)

    def pull(self) -> None:
        """Move received bytes from the engine into the reader while it has room.

        Only once the application has the stream: until then its bytes stay in the engine, counted
        against the connection's receive bound (a peer opening streams nobody accepts fills that, not
        a reader per stream).
        """
        if not self.taken:
            return
        eng = self.conn.engine
        while not self.gate.paused:
            data = eng.read(self.stream_id, READER_LIMIT)
            if not data:
                break
            self.reader.feed_data(data)
        if eng.at_eof(self.stream_id) and not self.eof_fed:
            self.eof_fed = True
            self.reader.feed_eof()
            self.settle()
        self.conn.kick()

    def push(self) -> None:
        """Move written bytes into the engine's send buffer as far as it has room."""
        eng = self.conn.engine
        if eng.state.name == "CLOSED":
            return
        n = min(len(self.pending), eng.send_room())
        last = n == len(self.pending) and self.fin and not self.fin_queued
        if n or last:
            eng.send(self.stream_id, bytes(self.pending[:n]), fin=last)
            del self.pending[:n]
            self.fin_queued = self.fin_queued or last
            self.conn.kick()
        self.settle()

    def settle(self) -> None:
        """Leave the connection's table when nothing is left to move; come back while written bytes wait."""
        if self.eof_fed and not self.pending and (self.fin_queued or not self.fin):
            self.conn.streams.pop(self.stream_id, None)
        else:
            self.conn.streams.setdefault(self.stream_id, self)


class StreamConnection:
    """An established Stream connection: open or accept streams as (reader, writer) pairs."""

    def __init__(self, endpoint: StreamEndpoint, engine: Connection) -> None:
        self.endpoint = endpoint
        self.engine = engine
        self.streams: dict[int, StreamHandle] = {}
        self.incoming: asyncio.Queue[StreamHandle] = asyncio.Queue()
        self.established = asyncio.Event()
        self.writable = asyncio.Event()
        self.acked = asyncio.Event()  # set by the ACK that settles everything sent (and at the close)
        self.closed = asyncio.Event()

    @property
    def peer(self) -> Address:
        return self.engine.peer

    def check(self) -> None:
        if self.closed.is_set():
            raise self.engine.error or StreamError("connection closed")

    def kick(self) -> None:
        self.endpoint.kick()

    def _handle(self, sid: int) -> StreamHandle:
        h = self.streams.get(sid)
        if h is None:
            h = self.streams[sid] = StreamHandle(self, sid)
        return h

    def open_stream(self) -> tuple[asyncio.StreamReader, StreamWriter]:
        """A new stream of ours."""
        self.check()
        h = self._handle(self.engine.open_stream())
        h.taken = True
        return h.reader, h.writer

    async def accept_stream(self) -> tuple[asyncio.StreamReader, StreamWriter]:
        """The next stream the peer opened."""
        getter = asyncio.ensure_future(self.incoming.get())
        closed = asyncio.ensure_future(self.closed.wait())
        try:
            done, _ = await asyncio.wait({getter, closed}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # no waiter outlives the call; a stream already taken goes back
            closed.cancel()
            if getter.done() and not getter.cancelled():
                self.incoming.put_nowait(getter.result())
            else:
                getter.cancel()
            raise
        closed.cancel()
        if getter in done:
            h = getter.result()
            h.taken = True
            h.pull()
            return h.reader, h.writer
        getter.cancel()
        self.check()
        raise StreamError("connection closed")

    def close(self) -> None:
        """Reset the connection (streams end cleanly only by write_eof and the peer reading it)."""
        self.engine.close()
        self.kick()

    def _on_event(self, ev: object) -> None:
        if isinstance(ev, Established):
            self.established.set()
        elif isinstance(ev, StreamOpened):
            self.incoming.put_nowait(self._handle(ev.stream_id))
        elif isinstance(ev, Readable):
            h = self.streams.get(ev.stream_id)  # none: an event queued before the stream's end was read
            if h is not None:
                h.pull()
        elif isinstance(ev, Writable):
            for h in list(self.streams.values()):
                if h.pending or (h.fin and not h.fin_queued):
                    h.push()
            self.writable.set()
        elif isinstance(ev, AllAcked):
            self.acked.set()
        elif isinstance(ev, Closed):
            self.closed.set()
            self.established.set()
            self.writable.set()
            self.acked.set()
            exc = ev.error or StreamError("connection closed")
            for h in self.streams.values():
                if not h.reader.at_eof():
                    h.reader.set_exception(exc)


class StreamEndpoint(asyncio.DatagramProtocol):
    """One UDP socket carrying Stream connections."""

    def __init__(self, config: StreamConfig | None = None, profile: Profile = "seed", listening: bool = False,
                 keys: OpenWeaverKeys | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        self.engine = Endpoint(config, profile=profile, listening=listening, rng=random.SystemRandom(), keys=keys)
        self.transport: asyncio.DatagramTransport | None = None
        self.conns: dict[int, StreamConnection] = {}
        self.accepted: asyncio.Queue[StreamConnection] = asyncio.Queue()
        self._timer: asyncio.TimerHandle | None = None
        self._kick_scheduled = False
        self.sock: socket.socket | None = None  # the bound socket, drained in batches

    @classmethod
    async def listen(cls, host: str, port: int, *, config: StreamConfig | None = None,
                     profile: Profile = "seed", keys: OpenWeaverKeys | None = None) -> StreamEndpoint:
        """An endpoint accepting connections on (host, port); `keys` for profile "openweaver"."""
        return await cls._bind(host, port, config, profile, True, keys)

    @classmethod
    async def bind(cls, host: str = "127.0.0.1", port: int = 0, *, config: StreamConfig | None = None,
                   profile: Profile = "seed", keys: OpenWeaverKeys | None = None) -> StreamEndpoint:
        """An endpoint that only dials out."""
        return await cls._bind(host, port, config, profile, False, keys)

    @classmethod
    async def _bind(cls, host: str, port: int, config: StreamConfig | None, profile: Profile,
                    listening: bool, keys: OpenWeaverKeys | None) -> StreamEndpoint:
        loop = asyncio.get_running_loop()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            sock.setblocking(False)
            for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, opt, SOCKET_BUFFER)
            sock.bind((host, port))
            _, proto = await loop.create_datagram_endpoint(lambda: cls(config, profile, listening, keys), sock=sock)
        except BaseException:
            sock.close()
            raise
        proto.sock = sock
        return proto

    @property
    def address(self) -> Address:
        assert self.transport is not None
        addr: Address = self.transport.get_extra_info("sockname")[:2]
        return addr

    async def dial(self, addr: Address, remote_key: bytes | None = None) -> StreamConnection:
        """Connect to a listening endpoint; raises StreamReset if the handshake fails.

        Profile "openweaver" needs the listener's static public key, `remote_key`.
        """
        engine = self.engine.dial(addr, _now(self.loop), remote_key)
        conn = self.conns[engine.local_id] = StreamConnection(self, engine)
        self.kick()
        await conn.established.wait()
        conn.check()
        return conn

    async def accept(self) -> StreamConnection:
        """The next connection dialed to this listening endpoint."""
        return await self.accepted.get()

    def close(self) -> None:
        for c in list(self.conns.values()):
            c.engine.close()
        self._run()
        if self._timer is not None:
            self._timer.cancel()
        if self.transport is not None:
            self.transport.close()

    # ---------------------------------------------------------------- DatagramProtocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a datagram endpoint's transport

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        now = _now(self.loop)
        receive = self.engine.receive
        receive(data, (addr[0], addr[1]), now)
        # asyncio reads one datagram per wake-up; drain what else is queued now, so that one
        # pump run (one ACK, one batch of sends) answers the whole batch.
        recvfrom = self.sock.recvfrom if self.sock is not None else None
        for _ in range(RECV_BATCH if recvfrom is not None else 0):
            try:
                data, addr = recvfrom(RECV_SIZE)  # type: ignore[misc]
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break  # ICMP errors: the engine's timers handle unreachable peers
            receive(data, (addr[0], addr[1]), now)
        self.kick()

    def error_received(self, exc: Exception) -> None:
        pass  # ICMP errors: the engine's timers handle unreachable peers

    # ---------------------------------------------------------------- pump
    def kick(self) -> None:
        """Run the pump soon (coalesces many calls within one loop iteration)."""
        if not self._kick_scheduled:
            self._kick_scheduled = True
            self.loop.call_soon(self._run)

    def _run(self) -> None:
        self._kick_scheduled = False
        now = _now(self.loop)
        self.engine.on_timer(now)
        for _ in range(4):
            for engine, ev in self.engine.events():
                conn = self.conns.get(engine.local_id)
                if conn is None:
                    conn = self.conns[engine.local_id] = StreamConnection(self, engine)
                if isinstance(ev, Established) and engine.incoming:
                    self.accepted.put_nowait(conn)
                conn._on_event(ev)
                if isinstance(ev, Closed):
                    self.conns.pop(engine.local_id, None)
            out = self.engine.transmit(now)
            if self.transport is not None and not self.transport.is_closing():
                for data, addr in out:
                    self.transport.sendto(data, addr)
            if not out:
                break
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        t = self.engine.next_timer(now)
        if t is not None:
            self._timer = self.loop.call_at(max(t, now) / 1e9, self._run)

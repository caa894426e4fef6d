"""bymux streams carried by Aqueduct channels instead of bymux packets.

Theory of operation: the two sides share one control channel each way
(handed over in a first message, or made in-process by `local_pair`). It
carries global credit (`["credit", n]`: how many more streams the peer may
open) and stream offers. An offer `["open", id, data_rx, ctl_rx, data_tx,
ctl_tx]` hands the peer four channel halves: per side, a data channel
(bytes, in messages of at most `max_chunk`) and a control channel (stream
credit, ping, pong, stop). The spec's packets map onto them so:

  Write     -> a bytes message on our data channel (costs credit as in bymux)
  Close     -> finish of our data channel (the peer reads b"" after the data)
  StopRead  -> `["stop"]` on our control channel, then closing the peer's
               data receiver; the peer's writes end and it finishes its data
               channel (the spec's Close answer)
  Credit, Ping, Pong -> `["credit", n]`, `["ping"]`, `["pong"]` on our control channel

A side finishes its control channel once it both closed and stopped reading
(the point after which bymux allows no more packets); a stream has ended when
all four channels have. The receive side pulls data as it comes, whatever
the application does, and checks it against the credit it gave: more than
that terminates the connection (`ConnectionTerminated`, as over bytes).
Aqueduct's own per-channel flow control still applies below.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any

from aqueduct.api import Receiver, Sender, channel
from aqueduct.errors import AqueductError, ChannelClosed, ChannelFinished, ReceiverDropped

from .buffered import BufferedStream, StreamAcceptor
from .credit import CreditOnInfinite, CreditOverflow, add_credit, restore_amount
from .errors import BymuxError, ConnectionLost, ConnectionTerminated, Rule, StreamStopped
from .pulse import Pulse

DEFAULT_WINDOW = 256 * 1024
DEFAULT_MAX_STREAMS = 64
DEFAULT_MAX_CHUNK = 16 * 1024
OFFER_KEY = "bymux"


class ChannelStream(BufferedStream):
    """A bymux stream on Aqueduct channels (satisfies `interface.ByteStream`)."""

    _conn: ChannelConnection

    def __init__(
        self,
        conn: ChannelConnection,
        stream_id: int,
        out_data: Sender[Any],
        out_ctl: Sender[Any],
        in_data: Receiver[Any],
        in_ctl: Receiver[Any],
    ) -> None:
        super().__init__(stream_id)
        self._conn = conn
        self._out_data = out_data
        self._out_ctl = out_ctl
        self._in_data = in_data
        self._in_ctl = in_ctl
        self._send_credit = 0
        self._recv_credit = 0
        self._closed = False  # our data channel finished (Close sent)
        self._read_done = False  # we stopped reading or read the end (no more credit from us)
        self._ctl_done = False  # our control channel finished
        self._peer_stopped = False  # the peer stopped reading
        self._in_data_ended = False
        self._in_ctl_ended = False
        self._data_task = asyncio.create_task(self._pump_data())
        self._ctl_task = asyncio.create_task(self._pump_ctl())

    # ------------------------------------------------------------ API

    async def write(self, data: bytes) -> None:
        """Send `data` in chunks as credit allows."""
        view = memoryview(data)
        while view:
            await self._pulse.wait_for(lambda: self._write_blocker() is not None or self._send_credit > 0)
            error = self._write_blocker()
            if error is not None:
                raise error
            n = min(len(view), self._send_credit, self._conn.max_chunk)
            self._send_credit -= n
            try:
                await self._out_data.send(bytes(view[:n]))
            except ReceiverDropped:
                raise StreamStopped(f"stream {self.stream_id}: the peer stopped reading") from None
            except AqueductError as exc:
                raise self._conn._lose(ConnectionLost(f"aqueduct: {exc!r}")) from exc
            view = view[n:]

    def _write_blocker(self) -> BymuxError | None:
        if self._conn.lost is not None:
            return self._conn.lost
        if self._peer_stopped or self._closed:
            return StreamStopped(f"stream {self.stream_id} takes no more writes")
        return None

    async def ping(self) -> float:
        """Round-trip time, in seconds, of a ping on this stream."""
        if self._conn.lost is not None:
            raise self._conn.lost
        if self._ctl_done:
            raise StreamStopped(f"stream {self.stream_id}: closed and stopped reading")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[float] = loop.create_future()
        self._pings.append((loop.time(), fut))
        await self._ctl_send(["ping"])
        return await fut

    async def close(self) -> None:
        """Write no more (finish our data channel). Idempotent."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(AqueductError):
            await self._out_data.finish()
        self._pulse.fire()
        await self._maybe_finish_ctl()

    async def stop_read(self) -> None:
        """Read no more: tell the peer, drop buffered data. Idempotent."""
        if self._read_done:
            return
        await self._ctl_send(["stop"])
        self._in_data.close()
        self._data_task.cancel()
        self._in_data_ended = True
        self._buffer.clear()
        self._eof = True
        await self._read_side_done()

    # ------------------------------------------------------ internals

    async def _ctl_send(self, message: list[Any]) -> None:
        if self._ctl_done or self._conn.lost is not None:
            return
        try:
            await self._out_ctl.send(message)
        except AqueductError as exc:
            self._conn._lose(ConnectionLost(f"aqueduct: {exc!r}"))

    async def _grant(self, amount: int) -> None:
        self._recv_credit += amount
        await self._ctl_send(["credit", amount])

    async def _restore_credit(self) -> None:
        if self._read_done or self._ctl_done:
            return
        grant = restore_amount(self._conn.window, len(self._buffer), self._recv_credit)
        if grant:
            await self._grant(grant)

    async def _read_side_done(self) -> None:
        self._read_done = True
        self._pulse.fire()
        await self._maybe_finish_ctl()

    async def _maybe_finish_ctl(self) -> None:
        if self._closed and self._read_done and not self._ctl_done:
            self._ctl_done = True
            with contextlib.suppress(AqueductError):
                await self._out_ctl.finish()
        self._maybe_ended()

    def _maybe_ended(self) -> None:
        if self._ctl_done and self._in_data_ended and self._in_ctl_ended:
            self._conn._stream_ended(self)

    async def _pump_data(self) -> None:
        conn = self._conn
        try:
            while True:
                data = await self._in_data.recv()
                if not isinstance(data, bytes) or len(data) > self._recv_credit:
                    size = len(data) if isinstance(data, bytes) else type(data).__name__
                    conn._lose(ConnectionTerminated(Rule.WRITE_BEYOND_CREDIT, f"stream {self.stream_id}: {size}"))
                    return
                self._recv_credit -= len(data)
                self._buffer += data
                conn._note_buffered()
                self._pulse.fire()
        except ChannelFinished:
            self._in_data_ended = True
            self._eof = True
            await self._read_side_done()
        except ChannelClosed:
            return
        except AqueductError as exc:
            conn._lose(ConnectionLost(f"aqueduct: {exc!r}"))

    async def _pump_ctl(self) -> None:
        conn = self._conn
        try:
            while True:
                message = await self._in_ctl.recv()
                kind = message[0] if isinstance(message, list) and message else None
                if kind == "credit" and len(message) == 2 and isinstance(message[1], int):
                    self._on_credit(message[1])
                elif kind == "ping":
                    await self._ctl_send(["pong"])
                elif kind == "pong":
                    self._resolve_ping()
                elif kind == "stop":
                    self._peer_stopped = True
                    self._pulse.fire()
                    await self.close()
                else:
                    raise ConnectionTerminated(Rule.UNDEFINED_PACKET_TYPE, f"stream {self.stream_id}: {message!r}")
        except ChannelFinished:
            self._in_ctl_ended = True
            self._fail_pings(StreamStopped(f"stream {self.stream_id}: the peer ended it before the pong"))
            self._maybe_ended()
        except ConnectionTerminated as exc:
            conn._lose(exc)
        except AqueductError as exc:
            conn._lose(ConnectionLost(f"aqueduct: {exc!r}"))

    def _on_credit(self, amount: int) -> None:
        if self._peer_stopped:
            raise ConnectionTerminated(Rule.CREDIT_AFTER_STOP_READ, f"stream {self.stream_id}")
        try:
            self._send_credit = add_credit(self._send_credit, amount)
        except CreditOverflow as exc:
            raise ConnectionTerminated(Rule.CREDIT_OVERFLOW, str(exc)) from None
        except CreditOnInfinite as exc:
            raise ConnectionTerminated(Rule.CREDIT_ON_INFINITE, str(exc)) from None
        self._pulse.fire()

    def _abort(self, error: BymuxError) -> None:
        for task in (self._data_task, self._ctl_task):
            task.cancel()
        for half in (self._out_data, self._out_ctl):
            with contextlib.suppress(AqueductError):
                half.cancel()
        for rx in (self._in_data, self._in_ctl):
            rx.close()
        self._fail_pings(error)
        self._pulse.fire()


class ChannelConnection(StreamAcceptor[ChannelStream]):
    """Many bymux streams over Aqueduct channels (satisfies `interface.StreamConnection`)."""

    def __init__(
        self,
        ctl_out: Sender[Any],
        ctl_in: Receiver[Any],
        *,
        initiator: bool,
        window: int = DEFAULT_WINDOW,
        max_streams: int = DEFAULT_MAX_STREAMS,
        max_chunk: int = DEFAULT_MAX_CHUNK,
    ) -> None:
        if window < 1 or max_streams < 1 or max_chunk < 1:
            raise ValueError("window, max_streams and max_chunk must be positive")
        self.initiator = initiator
        self.window = window
        self.max_streams = max_streams
        self.max_chunk = max_chunk
        self.lost: ConnectionLost | None = None
        self.max_buffered = 0
        self._ctl_out = ctl_out
        self._ctl_in = ctl_in
        self._streams: dict[int, ChannelStream] = {}
        self._accepted: deque[ChannelStream] = deque()
        self._send_credit = 0  # streams we may still open
        self._recv_credit = 0  # streams the peer may still open
        self._peer_done = False
        self._next_id = 0 if initiator else 1
        self._pulse = Pulse()
        self._task: asyncio.Task[None] | None = None
        self._credit_tasks: set[asyncio.Task[None]] = set()

    async def _start(self) -> ChannelConnection:
        self._task = asyncio.create_task(self._pump())
        await self._give_global_credit(self.max_streams)
        return self

    @property
    def buffered_bytes(self) -> int:
        """Received bytes held in stream buffers."""
        return sum(s.buffered for s in self._streams.values())

    async def open_stream(self) -> ChannelStream:
        """Create a stream (four channels handed over in one offer), waiting for global credit."""
        await self._pulse.wait_for(lambda: self.lost is not None or self._send_credit > 0)
        if self.lost is not None:
            raise self.lost
        self._send_credit -= 1
        stream_id = self._next_id
        self._next_id += 2
        my_data_tx, my_data_rx = channel()
        my_ctl_tx, my_ctl_rx = channel()
        peer_data_tx, peer_data_rx = channel()
        peer_ctl_tx, peer_ctl_rx = channel()
        stream = ChannelStream(self, stream_id, my_data_tx, my_ctl_tx, peer_data_rx, peer_ctl_rx)
        self._streams[stream_id] = stream
        await self._send(["open", stream_id, my_data_rx, my_ctl_rx, peer_data_tx, peer_ctl_tx])
        await stream._grant(self.window)
        return stream

    def _peer_finished(self) -> bool:
        return self._peer_done

    async def close(self) -> None:
        """End every stream and the control channel; pending calls get ConnectionLost."""
        if self.lost is None:
            with contextlib.suppress(AqueductError):
                await self._ctl_out.finish()
        self._lose(ConnectionLost("connection closed locally"))

    # ------------------------------------------------------ internals

    async def _send(self, message: list[Any]) -> None:
        try:
            await self._ctl_out.send(message)
        except AqueductError as exc:
            raise self._lose(ConnectionLost(f"aqueduct: {exc!r}")) from exc

    async def _give_global_credit(self, amount: int) -> None:
        self._recv_credit += amount
        with contextlib.suppress(ConnectionLost):
            await self._send(["credit", amount])

    def _note_buffered(self) -> None:
        self.max_buffered = max(self.max_buffered, self.buffered_bytes)

    def _lose(self, error: ConnectionLost) -> ConnectionLost:
        if self.lost is not None:
            return self.lost
        self.lost = error
        if self._task is not None:
            self._task.cancel()
        with contextlib.suppress(AqueductError):
            self._ctl_out.cancel()
        self._ctl_in.close()
        for stream in self._streams.values():
            stream._abort(error)
        self._pulse.fire()
        return error

    def _stream_ended(self, stream: ChannelStream) -> None:
        if self._streams.get(stream.stream_id) is not stream:
            return
        del self._streams[stream.stream_id]
        if stream.stream_id % 2 != (0 if self.initiator else 1) and self.lost is None:
            theirs = sum(1 for sid in self._streams if sid % 2 != (0 if self.initiator else 1))
            grant = restore_amount(self.max_streams, theirs, self._recv_credit)
            if grant:
                task = asyncio.create_task(self._give_global_credit(grant))
                self._credit_tasks.add(task)
                task.add_done_callback(self._credit_tasks.discard)

    async def _pump(self) -> None:
        try:
            while True:
                message = await self._ctl_in.recv()
                kind = message[0] if isinstance(message, list) and message else None
                if kind == "credit" and len(message) == 2 and isinstance(message[1], int) and message[1] > 0:
                    self._send_credit += message[1]
                    self._pulse.fire()
                elif kind == "open" and len(message) == 6:
                    await self._on_open(*message[1:])
                else:
                    raise ConnectionTerminated(Rule.UNDEFINED_PACKET_TYPE, f"control message {message!r}")
        except ChannelFinished:
            self._peer_done = True
            self._pulse.fire()
        except ConnectionTerminated as exc:
            self._lose(exc)
        except AqueductError as exc:
            self._lose(ConnectionLost(f"aqueduct: {exc!r}"))

    async def _on_open(self, stream_id: Any, data_rx: Any, ctl_rx: Any, data_tx: Any, ctl_tx: Any) -> None:
        if not isinstance(stream_id, int) or stream_id % 2 == (0 if self.initiator else 1):
            raise ConnectionTerminated(Rule.CREATE_WRONG_PARITY, f"stream {stream_id!r}")
        if stream_id in self._streams:
            raise ConnectionTerminated(Rule.CREATE_ACTIVE_ID, f"stream {stream_id}")
        if self._recv_credit < 1:
            raise ConnectionTerminated(Rule.CREATE_WITHOUT_GLOBAL_CREDIT, f"stream {stream_id}")
        if not (isinstance(data_rx, Receiver) and isinstance(ctl_rx, Receiver)):
            raise ConnectionTerminated(Rule.UNDEFINED_PACKET_TYPE, "an offer must carry two receivers")
        if not (isinstance(data_tx, Sender) and isinstance(ctl_tx, Sender)):
            raise ConnectionTerminated(Rule.UNDEFINED_PACKET_TYPE, "an offer must carry two senders")
        self._recv_credit -= 1
        stream = ChannelStream(self, stream_id, data_tx, ctl_tx, data_rx, ctl_rx)
        self._streams[stream_id] = stream
        await stream._grant(self.window)
        self._accepted.append(stream)
        self._pulse.fire()


async def open_on_aqueduct(sender: Sender[Any], **options: int) -> ChannelConnection:
    """Start bymux-on-Aqueduct as the initiator: offer control channels through `sender` (e.g. an entrypoint)."""
    out_tx, out_rx = channel()
    back_tx, back_rx = channel()
    await sender.send({OFFER_KEY: [out_rx, back_tx]})
    return await ChannelConnection(out_tx, back_rx, initiator=True, **options)._start()


async def accept_on_aqueduct(receiver: Receiver[Any], **options: int) -> ChannelConnection:
    """Start bymux-on-Aqueduct as the responder from the next message on `receiver`."""
    offer = await receiver.recv()
    if not isinstance(offer, dict) or not isinstance(offer.get(OFFER_KEY), list) or len(offer[OFFER_KEY]) != 2:
        raise ConnectionLost(f"not a bymux offer: {offer!r}")
    ctl_in, ctl_out = offer[OFFER_KEY]
    if not (isinstance(ctl_in, Receiver) and isinstance(ctl_out, Sender)):
        raise ConnectionLost("a bymux offer carries a Receiver and a Sender")
    return await ChannelConnection(ctl_out, ctl_in, initiator=False, **options)._start()


async def local_pair(**options: int) -> tuple[ChannelConnection, ChannelConnection]:
    """An initiator and a responder joined by in-process Aqueduct channels."""
    a_tx, b_rx = channel()
    b_tx, a_rx = channel()
    a = await ChannelConnection(a_tx, a_rx, initiator=True, **options)._start()
    b = await ChannelConnection(b_tx, b_rx, initiator=False, **options)._start()
    return a, b

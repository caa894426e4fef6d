"""ConnectionLink: the asyncio face of one engine, the `Link` networked halves talk through.

A user holds a `Connection` (connection.py), a small facade over one of these;
what the library itself needs (the engine, the aioquic adapter, the ready and
closed futures, the recording and metrics hooks) lives here, off the public
surface.

It turns engine application events into wake-ups (per receiver, per
sender, the whole connection), runs the codec on every send and take, binds
the halves a message carries (see halves/) to the handles the engine
created for them (halves/wiring.py), and applies backpressure: a send waits, before
it writes, while the stream it would write to (or the connection, or for
datagrams aioquic's queue) is over its bound, and never after it wrote, so a
send cancelled or timed out has sent nothing; `send_now` refuses with
WouldBlock instead of waiting.

The hot paths are short: a send goes to the engine's one send path (a
batch of one, `Engine.send_many`; with attachments `Engine.send`), then
the adapter takes the engine's commands (`flush`: only it joins writes and
talks to aioquic); a coroutine is made only when the send must wait; a
receiver takes a bounded batch of messages at once into its own deque
(`fill`), so most receives are a popleft. Its parts own their state:
prefetch.py, drops.py, outcomes.py, halves/wiring.py (moving halves); hooks.py holds its
observers' protocols. RTT and peer address are the adapter's (`protocol`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..aio import mark_seen
from ..core import app
from ..core.app import Delivery
from ..errors import (
    ERROR_FOR_REASON,
    OUTCOME_FOR_END,
    ChannelError,
    ConnectError,
    ConnectionLost,
    EndReason,
    LimitExceeded,
    Outcome,
    WouldBlock,
)
from ..wire.channel_id import ChannelId
from ..wire.errors import CloseCode
from ..wire.headers import Headers
from .adapter import Adapter
from .codec import CODEC_HEADER, Codec, CodecMismatch, codec_refusal
from .drops import Drops
from .halves import Half, Prefetched, Receiver, Sender
from .halves.base import Check
from .halves.wiring import attach_kind, bind_moved, networked_receiver, networked_sender, open_handle
from .hooks import EventObserver, Recording
from .outcomes import Outcomes
from .prefetch import Prefetch
from .schema import SCHEMA_HEADER, SchemaCheck, SchemaMismatch, check_peer
from .stats import Stats
from .validation import spec_for

if TYPE_CHECKING:
    from ..core.engine import Engine

_ORDERED, _UNRELIABLE = Delivery.ORDERED, Delivery.UNRELIABLE  # (an enum member lookup costs ~80 ns)
A = TypeVar("A", bound=Adapter)


class ConnectionLink(Generic[A]):
    """One Aqueduct connection as the library sees it: engine events in, wake-ups and halves out.

    Generic in its adapter: this module knows it only as an `Adapter` (adapter.py); the modules that start
    one (endpoints.py, connection.py) see its concrete type (`QuicLink`, connection.py)."""

    def __init__(self, protocol: A, codec: Codec, entrypoint_type: Any = None,
                 schema: bytes | None = None, schema_check: SchemaCheck = "exact") -> None:
        self._protocol = protocol
        self.codec = codec
        self.stats = Stats()
        self._loop = asyncio.get_running_loop()
        self._waiters: dict[int, list[asyncio.Future[None]]] = {}
        self._receiver_ended: dict[int, EndReason] = {}
        self._sender_ended: dict[int, EndReason] = {}
        self._last_stream: dict[int, int | None] = {}
        self._outcomes = Outcomes(self._loop)
        self._prefetch = Prefetch(self, protocol, codec, self.stats, self._loop.time)
        """The networked receivers' prefetch buffers (prefetch.py)."""
        self._tasks: set[asyncio.Task[None]] = set()
        self.drops = Drops(self, self._prefetch, self._loop)
        """Halves the application let go of, told to the engine from the loop (drops.py)."""
        self._entrypoint: Sender[Any] | Receiver[Any] | None = None
        self._entrypoint_spec = spec_for(entrypoint_type) if entrypoint_type is not None else None
        self._schema, self._schema_check = schema, schema_check
        self.ready: asyncio.Future[ConnectionLink[A]] = self._loop.create_future()
        self.ready.add_done_callback(mark_seen)  # (a refusal is raised where connect waits)
        self.closed: asyncio.Future[app.ConnectionClosed] = self._loop.create_future()
        self.peer_headers: Headers = ()
        self.recording: Recording | None = None
        """Set by `record=` (aqueduct/recording/hook.py): told of every event, send and take."""
        self.metrics: EventObserver | None = None
        """Set by `aqueduct.metrics.Metrics.track`: told of every batch of engine events."""
        self.size_sources: dict[str, Callable[[], Mapping[str, int]]] = {}
        """What the layers above hold for this connection, by layer (the services' calls): `state_sizes()` adds
        their tables to the engine's."""
        protocol.listener = self._on_events
        if protocol.engine is not None:
            self._on_events(protocol.engine.events())
            if protocol.engine.entrypoint is not None and protocol.side.name == "CLIENT":
                self._entrypoint = networked_sender(self, protocol.engine.entrypoint, self._entrypoint_spec)

    # ---- properties ----
    @property
    def engine(self) -> Engine:
        """The protocol engine of this connection."""
        assert self._protocol.engine is not None
        return self._protocol.engine

    @property
    def protocol(self) -> A:
        """The aioquic adapter."""
        return self._protocol

    @property
    def entrypoint(self) -> Sender[Any] | Receiver[Any]:
        """Client: the Sender to the server's entrypoint. Server: the Receiver of the client's entrypoint."""
        if self._entrypoint is None:
            raise ConnectionLost("the connection has no entrypoint (peer headers not received)")
        return self._entrypoint

    def state_sizes(self) -> dict[str, int]:
        """What the peer makes this connection hold: the engine's tables (`Engine.state_sizes()`) and those of the
        layers above (`size_sources`: the services' `calls_running`, `nested_calls`, `call_metadata_bytes`)."""
        sizes = self.engine.state_sizes()
        for source in self.size_sources.values():
            sizes.update(source())
        return sizes

    def channel_name(self, handle: int) -> str:
        """How errors name the channel behind an engine handle: its channel ID, as the wire spells it."""
        channel = self._protocol.engine.channel_of(handle) if self._protocol.engine is not None else None
        return f"channel {ChannelId(channel)!r}" if channel is not None else f"channel handle {handle}"

    def header(self, name: str) -> bytes | None:
        """The first peer header called `name`, if any."""
        return next((v for k, v in self.peer_headers if k == name), None)

    @property
    def is_closed(self) -> bool:
        """Whether the connection has ended."""
        return self.closed.done()

    # ---- engine events ----
    def _on_events(self, events: list[app.AppEvent]) -> None:
        if self.recording is not None:
            self.recording.on_events(events)
        if self.metrics is not None:
            self.metrics.on_events(events)
        for ev in events:
            if isinstance(ev, app.MessageAvailable):
                self._wake(ev.receiver)
            elif isinstance(ev, app.ReceiverEnded):
                self._receiver_ended[ev.receiver] = ev.reason
                self._prefetch.forget(ev.receiver, discard=ev.reason is not EndReason.FINISHED)
                self._wake(ev.receiver)
            elif isinstance(ev, app.SenderEnded):
                self._sender_ended[ev.sender] = ev.reason
                if ev.sender in self._outcomes:
                    self._outcomes.settle_all(ev.sender, OUTCOME_FOR_END[ev.reason])
                self._wake(ev.sender)
            elif isinstance(ev, app.WritableAgain):
                self._wake(ev.sender)
            elif isinstance(ev, app.HeadersReceived):
                self._on_headers(ev)
            elif isinstance(ev, app.ConnectionClosed):
                self._on_closed(ev)
            elif self._outcomes and isinstance(ev, app.MessagesAcked | app.MessagesNacked):
                self._outcomes.settle_run(ev)

    def _on_headers(self, ev: app.HeadersReceived) -> None:
        self.peer_headers = ev.headers
        if ev.entrypoint is not None:
            self._entrypoint = networked_receiver(self, ev.entrypoint, self._entrypoint_spec)
        why = codec_refusal(self.codec, self.header(CODEC_HEADER), self.engine.side.name.lower())
        if why is not None:
            self._refuse(CloseCode.CODEC_MISMATCH, why, CodecMismatch)
            return
        refused = check_peer(self._schema, self.header(SCHEMA_HEADER), self._schema_check,
                             self.engine.config.max_schema_depth, self.engine.side.name.lower())
        if refused is not None:
            self._refuse(CloseCode.SCHEMA_MISMATCH, refused, SchemaMismatch)
            return
        if not self.ready.done():
            self.ready.set_result(self)

    def _refuse(self, code: CloseCode, why: str, error: type[ConnectError]) -> None:
        self.engine.close(code, why, now=self._loop.time())
        self._loop.call_soon(self._protocol.flush)
        if not self.ready.done():
            self.ready.set_exception(error(why, code))

    def _on_closed(self, ev: app.ConnectionClosed) -> None:
        if not self.ready.done():  # (closed before it was usable: no channel existed, a ConnectError)
            exc_type = {CloseCode.CODEC_MISMATCH: CodecMismatch, CloseCode.SCHEMA_MISMATCH: SchemaMismatch}.get(
                ev.error_code, ConnectError)  # type: ignore[call-overload]
            self.ready.set_exception(exc_type(ev.reason or "connection closed before it was ready", ev.error_code))
        if not self.closed.done():
            self.closed.set_result(ev)
        self._outcomes.settle_every(Outcome.CONNECTION_LOST)
        for handle in self._prefetch.handles():  # the engine dropped its queues: what was taken ahead goes too
            self._prefetch.forget(handle, discard=self._receiver_ended.get(handle) is not EndReason.FINISHED)
        for handle in list(self._waiters):
            self._wake(handle)

    def _wake(self, handle: int) -> None:
        for fut in self._waiters.pop(handle, ()):
            if not fut.done():
                fut.set_result(None)

    async def _wait(self, handle: int) -> None:
        fut = self._loop.create_future()
        self._waiters.setdefault(handle, []).append(fut)
        try:
            await fut
        finally:  # a wait given up (as `ended()` under a timeout) takes its entry with it
            if fut.cancelled() and fut in (waiting := self._waiters.get(handle, [])):
                waiting.remove(fut)
                self._waiters.pop(handle) if not waiting else None

    def _lost(self) -> ConnectionLost:
        ev = self.closed.result() if self.closed.done() else None
        if ev is None:
            return ConnectionLost()
        return ConnectionLost(f"connection lost: {ev.reason or 'closed'} (code {ev.error_code})", ev.error_code)

    # ---- Link: sending ----
    def _check_datagram(self, payload: bytes) -> None:
        limit = self._protocol.datagram_payload_limit
        if len(payload) > limit:
            raise LimitExceeded(
                f"unreliable message of {len(payload)} bytes does not fit one datagram "
                f"(at most {limit} bytes of payload on this connection)"
            )

    def _send_now(self, handle: int, payload: bytes, halves: list[Half], delivery: Delivery) -> app.SendResult:
        if self.closed.done():
            raise self._lost()
        kinds = [attach_kind(h) for h in halves] if halves else ()  # (the common case builds no list)
        result = self.engine.send(handle, payload, kinds, delivery, now=self._loop.time())
        if self.recording is not None:
            self.recording.on_sent(handle, payload, delivery, result)
        if halves:
            for half, created in zip(halves, result.created, strict=True):
                bind_moved(self, half, created, self._spawn)
        self._last_stream[handle] = result.stream_id
        self.stats.count_sent(delivery, len(payload))
        self._protocol.flush()
        return result

    def _blocked(self, handle: int, delivery: Delivery) -> bool:
        if delivery is _UNRELIABLE:
            return self._protocol.send_blocked(None)
        stream = self._last_stream.get(handle) if delivery is _ORDERED else None
        if stream is None:
            return self._protocol.new_stream_blocked()
        return self._protocol.send_blocked(stream)

    def send(
        self, handle: int, obj: Any, delivery: Delivery, *, confirm: bool = False
    ) -> Coroutine[Any, Any, Outcome | None] | asyncio.Future[Outcome] | None:
        """Send, waiting while the stream is over its send bound: None once sent, else what to await (a
        coroutine that waits, then sends: cancelled while it waits, it has sent nothing); with `confirm`, what
        to await for the message's outcome (its future, or a coroutine that waits, sends and awaits it).

        A message without attachments that need not wait (nor be recorded, nor confirmed) goes to the engine's
        one send path as a batch of one (`Engine.send_many`) and its write to the adapter (`flush`): no
        coroutine, no waiter, no SendResult. Any other message that need not wait is sent at once too
        (`_send_now`), the halves it carries bound before this returns."""
        payload, halves = self.codec.encode(obj)
        protocol = self._protocol
        engine = protocol.engine
        if confirm or halves or self.recording is not None or engine is None or self.closed.done():
            if delivery is _UNRELIABLE:
                self._check_datagram(payload)
            if engine is None or self.closed.done() or self._blocked(handle, delivery):
                return self._send_waiting(handle, payload, halves, delivery, confirm)
            result = self._send_now(handle, payload, halves, delivery)
            return self._confirm(handle, delivery, result) if confirm else None
        if delivery is _UNRELIABLE:
            if len(payload) > protocol.datagram_payload_limit or protocol.send_blocked(None):
                return self._send_waiting(handle, payload, halves, delivery, False)
            engine.send_many(handle, (payload,), delivery, self._loop.time())
        else:
            last = self._last_stream.get(handle) if delivery is _ORDERED else None
            if protocol.new_stream_blocked() if last is None else protocol.send_blocked(last):
                return self._send_waiting(handle, payload, halves, delivery, False)
            stream = engine.send_many(handle, (payload,), delivery, self._loop.time())
            if last is None:
                self._last_stream[handle] = stream
        self.stats.count_sent(delivery, len(payload))
        protocol.flush()
        return None

    async def _send_waiting(
        self, handle: int, payload: bytes, halves: list[Half], delivery: Delivery, confirm: bool
    ) -> Outcome | None:
        """`send` when it must wait first (or the connection is not there to say): wait, then send (and with
        `confirm`, wait for the outcome)."""
        if delivery is _UNRELIABLE:
            self._check_datagram(payload)
        if self._blocked(handle, delivery):
            await self._wait_while(lambda: self._blocked(handle, delivery))
        result = self._send_now(handle, payload, halves, delivery)
        return await self._confirm(handle, delivery, result) if confirm else None

    async def _wait_while(self, blocked: Any) -> None:
        try:
            await self._protocol.wait_while(blocked)
        except ConnectionLost:
            raise self._lost() from None

    def send_now(
        self, handle: int, obj: Any, delivery: Delivery, *, confirm: bool = False, force: bool = False
    ) -> asyncio.Future[Outcome] | None:
        """Send at once, or raise WouldBlock if the window is full (`force` skips that check); with `confirm`
        the future of the message's outcome."""
        payload, halves = self.codec.encode(obj)
        if delivery is _UNRELIABLE:
            self._check_datagram(payload)
        if not force and self._blocked(handle, delivery):
            raise WouldBlock("the peer's window is full")
        result = self._send_now(handle, payload, halves, delivery)
        return self._confirm(handle, delivery, result) if confirm else None

    # ---- per-message outcomes (send(..., confirm=True)) ----
    def _confirm(self, handle: int, delivery: Delivery, result: app.SendResult) -> asyncio.Future[Outcome]:
        reliable = delivery is not _UNRELIABLE
        return self._outcomes.confirm(handle, reliable, result.number, self._sender_ended.get(handle))

    def finish(self, handle: int) -> None:
        """Finish a sender."""
        self._call(self.engine.finish, handle)

    def cancel(self, handle: int) -> None:
        """Cancel a sender (its confirmed messages still unanswered end CANCELLED, though the engine nacks them)."""
        if handle in self._outcomes:
            self._outcomes.settle_all(handle, Outcome.CANCELLED)
        self._call(self.engine.cancel, handle)

    def close_receiver(self, handle: int) -> None:
        """Close a receiver, discarding what it prefetched."""
        self._prefetch.forget(handle, discard=True)
        self._call(self.engine.close_receiver, handle)

    def _call(self, method: Any, handle: int) -> None:
        if self.closed.done():
            return
        method(handle, now=self._loop.time())
        self._protocol.flush_if_any()  # (closing an ended receiver writes nothing: no transmit for it)

    def drop_sender(self, handle: int) -> None:
        """A Sender object was garbage-collected (from `__del__`: may run anywhere, so defer)."""
        self.drops.defer(handle, False)

    def drop_receiver(self, handle: int) -> None:
        """A Receiver object was garbage-collected."""
        self.drops.defer(handle, True)

    # ---- Link: receiving ----
    async def fill(self, handle: int, buf: deque[Prefetched], check: Check | None = None,
                   where: Callable[[], str] | None = None) -> None:
        """Move the next queued messages of a receiver, decoded (and `check`ed, naming the channel by `where`), into
        its (empty) `buf` (a batch: prefetch.py), waiting for one; StopAsyncIteration after a finish; typed errors
        otherwise."""
        while True:
            if self._prefetch.take(handle, buf, self.recording, check, where):
                return
            reason = self._receiver_ended.get(handle)
            if reason is None and self.closed.done():
                reason = EndReason.CONNECTION_LOST
            if reason is EndReason.FINISHED:
                raise StopAsyncIteration
            if reason is EndReason.CONNECTION_LOST:
                raise self._lost()
            if reason is not None:
                raise ERROR_FOR_REASON[reason](f"channel ended: {reason.value}")
            await self._wait(handle)

    async def sender_ended(self, handle: int) -> EndReason:
        """Wait until the engine ends a sender; its reason."""
        while True:
            reason = self._sender_ended.get(handle)
            if reason is not None:
                return reason
            if self.closed.done():
                return EndReason.CONNECTION_LOST
            await self._wait(handle)

    def _spawn(self, coro: Any) -> None:
        """A relay of this link's (a half forwarded to another connection), in a context of its own: made in the
        sender's, a served call's for one, it kept that call's arguments as long as it relayed (SVC-12)."""
        task = self._loop.create_task(coro, context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---- closing ----
    async def close(self, code: int = 0, reason: str = "", timeout: float = 5.0) -> None:
        """Close the connection (every open handle ends with ConnectionLost) and wait until QUIC is done.

        A graceful close (code 0) by a client first finishes its entrypoint sender and waits (up to
        `timeout`) until the server has everything, so a server's `async for` over the entrypoint ends
        cleanly instead of raising ConnectionLost.
        """
        ep = self._entrypoint
        if code == 0 and isinstance(ep, Sender) and (handle := open_handle(ep)) is not None and not self.is_closed:
            with contextlib.suppress(ChannelError, TimeoutError):  # a silent server: close anyway
                await ep.finish()
                await asyncio.wait_for(self.sender_ended(handle), timeout)
        if not self.closed.done() and not self._protocol.terminated.done():
            self.engine.close(code, reason, now=self._loop.time())
            self._protocol.flush()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._protocol.terminated), timeout)
        for task in list(self._tasks):
            task.cancel()

    async def wait_closed(self) -> app.ConnectionClosed:
        """Wait until the connection ends."""
        return await asyncio.shield(self.closed)

"""ConnectionLink: the asyncio face of one engine, the `Link` networked halves talk through.

A user holds a `Connection` (connection.py), a small facade over one of these;
what the library itself needs (the engine, the aioquic adapter, the ready and
closed futures, the recording and metrics hooks) lives here, off the public
surface.

It turns engine application events into wake-ups (per receiver, per
sender, the whole connection), runs the codec on every send and take, binds
the halves a message carries (see halves.py) to the handles the engine
created for them, and applies backpressure: a send returns once the stream
it wrote to (or, for datagrams, aioquic's datagram queue) is back under its
bound, and `send_nowait` refuses with WouldBlock instead of waiting.

The hot paths are short: a send without attachments goes straight to the
engine's `send_plain` and creates a coroutine only when it must wait; a
receiver takes a bounded batch of messages at once into its own deque
(`fill`), so most receives are a popleft.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import deque
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..core import app
from ..core.app import Delivery
from ..errors import (
    ERROR_FOR_REASON,
    OUTCOME_FOR_END,
    AuthenticationFailed,
    ChannelError,
    ConnectionLost,
    EndReason,
    LimitExceeded,
    Outcome,
    ReceiverDropped,
    WouldBlock,
)
from ..quic.mtls import PeerIdentity
from ..quic.protocol import DATAGRAM_QUEUE_LIMIT, AqueductProtocol, consume_exception
from ..wire.channel_id import ChannelId
from ..wire.errors import CloseCode
from ..wire.headers import Headers
from .auth import Authenticate, authenticate_peer, refusal
from .codec import CODEC_HEADER, Codec
from .halves import (
    Half,
    Prefetched,
    Receiver,
    Sender,
    attach_kind,
    networked_half,
    networked_receiver,
    networked_sender,
)
from .schema import SCHEMA_HEADER, SchemaCheck, SchemaMismatch, check_peer
from .stats import Stats
from .validation import spec_for

if TYPE_CHECKING:
    from ..core.engine import Engine

log = logging.getLogger("aqueduct.api")

_ORDERED, _UNRELIABLE = Delivery.ORDERED, Delivery.UNRELIABLE  # (an enum member lookup costs ~80 ns)

PREFETCH_MESSAGES = 64
"""A networked receiver takes at most this many queued messages from the engine at once (see `fill`)."""
PREFETCH_BYTES = 64 * 1024
"""After a message of n bytes it takes at most max(1, PREFETCH_BYTES // n): large messages come one by one."""


class CodecMismatch(ConnectionLost):
    """The peer announced a different codec than ours."""


class EventObserver(Protocol):
    """What `ConnectionLink.metrics` must be (aqueduct.metrics.Metrics is one): told of every engine event batch."""

    def on_events(self, events: list[app.AppEvent]) -> None: ...


class Recording(Protocol):
    """What `ConnectionLink.recording` must be (aqueduct.recording.hook.ConnectionRecording is one): told of every
    event batch, send, take and drop. A protocol, so the API does not depend on the recording layer above it."""

    def on_events(self, events: list[app.AppEvent]) -> None:
        """A batch of engine application events."""

    def on_sent(self, handle: int, payload: bytes, delivery: Delivery, result: app.SendResult) -> None:
        """The engine accepted a message on sender `handle`."""

    def on_received(self, delivered: app.Delivered) -> None:
        """The application took a message."""

    def on_dropped(self, handle: int, receiver: bool) -> None:
        """The application dropped a half (before the engine hears of it)."""


class ConnectionLink:
    """One Aqueduct connection as the library sees it: engine events in, wake-ups and halves out."""

    def __init__(self, protocol: AqueductProtocol, codec: Codec, entrypoint_type: Any = None,
                 schema: bytes | None = None, schema_check: SchemaCheck = "exact") -> None:
        self._protocol = protocol
        self.codec = codec
        self.stats = Stats()
        self._loop = asyncio.get_running_loop()
        self._waiters: dict[int, list[asyncio.Future[None]]] = {}
        self._receiver_ended: dict[int, EndReason] = {}
        self._sender_ended: dict[int, EndReason] = {}
        self._last_stream: dict[int, int | None] = {}
        self._clear_sid: int | None = None
        self._clear_writes = -1
        """The stream a send last found not blocked, and protocol.stream_writes then: until another stream
        write, the next send to it need not check again (see AqueductProtocol.stream_writes)."""
        self._outcomes: dict[int, dict[tuple[bool, int], asyncio.Future[Outcome]]] = {}
        """Sender handle -> (reliable, number) -> the outcome future of a message sent with confirm=True."""
        self._bufs: dict[int, deque[Prefetched]] = {}
        """Receiver handle -> the buffer its Receiver prefetches into (cleared when the engine would discard)."""
        self._prefetch: dict[int, int] = {}
        self._undecoded: dict[int, tuple[Exception, Sequence[app.Delivered]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._drops: deque[tuple[int, bool]] = deque()
        """Handles of collected halves (and whether each is a receiver) not yet told to the engine."""
        self._drop_scheduled = False
        self._entrypoint: Sender[Any] | Receiver[Any] | None = None
        self._entrypoint_spec = spec_for(entrypoint_type) if entrypoint_type is not None else None
        self._schema, self._schema_check = schema, schema_check
        self.ready: asyncio.Future[ConnectionLink] = self._loop.create_future()
        self.ready.add_done_callback(consume_exception)
        self.closed: asyncio.Future[app.ConnectionClosed] = self._loop.create_future()
        self.peer_headers: Headers = ()
        self.recording: Recording | None = None
        """Set by `record=` (aqueduct/recording/hook.py): told of every event, send and take."""
        self.metrics: EventObserver | None = None
        """Set by `aqueduct.metrics.Metrics.track`: told of every batch of engine events."""
        self.authenticate: Authenticate | None = None
        """Server: the `serve(authenticate=...)` callback that must accept the client first (api/auth.py)."""
        self.identity: Any = None
        """Server: what `authenticate` returned for this client."""
        protocol.listener = self._on_events
        if protocol.engine is not None:
            self._on_events(protocol.engine.events())
            if protocol.engine.entrypoint is not None and protocol.side.name == "CLIENT":
                self._entrypoint = networked_sender(self, protocol.engine.entrypoint)
                self._entrypoint._spec = self._entrypoint_spec

    # ---- properties ----
    @property
    def engine(self) -> Engine:
        """The protocol engine of this connection."""
        assert self._protocol.engine is not None
        return self._protocol.engine

    @property
    def protocol(self) -> AqueductProtocol:
        """The aioquic adapter."""
        return self._protocol

    @property
    def entrypoint(self) -> Sender[Any] | Receiver[Any]:
        """Client: the Sender to the server's entrypoint. Server: the Receiver of the client's entrypoint."""
        if self._entrypoint is None:
            raise ConnectionLost("the connection has no entrypoint (peer headers not received)")
        return self._entrypoint

    def channel_name(self, handle: int) -> str:
        """How errors name the channel behind an engine handle: its channel ID, as the wire spells it."""
        channel = self._protocol.engine.channel_of(handle) if self._protocol.engine is not None else None
        return f"channel {ChannelId(channel)!r}" if channel is not None else f"channel handle {handle}"

    def header(self, name: str) -> bytes | None:
        """The first peer header called `name`, if any."""
        return next((v for k, v in self.peer_headers if k == name), None)

    @property
    def rtt(self) -> float:
        """aioquic's smoothed RTT estimate in seconds."""
        return self._protocol.rtt_smoothed

    @property
    def rtt_min(self) -> float:
        """The smallest RTT sample aioquic has seen, in seconds (inf before the first)."""
        return self._protocol.rtt_min

    @property
    def peer_address(self) -> tuple[str, int] | None:
        """The peer's (host, port) on the current network path, if known."""
        return self._protocol.peer_address

    @property
    def is_closed(self) -> bool:
        """Whether the connection has ended."""
        return self.closed.done()

    @property
    def peer_identity(self) -> PeerIdentity | None:
        """The peer's verified certificate identity (mutual TLS on a server; the server's on a client)."""
        return self._protocol.peer_identity

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
                self._forget_buffer(ev.receiver, discard=ev.reason is not EndReason.FINISHED)
                self._wake(ev.receiver)
            elif isinstance(ev, app.SenderEnded):
                self._sender_ended[ev.sender] = ev.reason
                if ev.sender in self._outcomes:
                    self._settle_all(ev.sender, OUTCOME_FOR_END[ev.reason])
                self._wake(ev.sender)
            elif isinstance(ev, app.WritableAgain):
                self._wake(ev.sender)
            elif isinstance(ev, app.HeadersReceived):
                self._on_headers(ev)
            elif isinstance(ev, app.PeerAwaitingAcceptance):
                if self.authenticate is None:
                    self.accept_peer(None)
                else:
                    self._spawn(authenticate_peer(self, self.authenticate, ev.headers))
            elif isinstance(ev, app.ConnectionClosed):
                self._on_closed(ev)
            elif self._outcomes and isinstance(ev, app.MessagesAcked | app.MessagesNacked):
                self._settle_run(ev)

    def _on_headers(self, ev: app.HeadersReceived) -> None:
        self.peer_headers = ev.headers
        if ev.entrypoint is not None:
            self._entrypoint = networked_receiver(self, ev.entrypoint)
            self._entrypoint._spec = self._entrypoint_spec
        theirs = self.header(CODEC_HEADER)
        if theirs is not None and theirs != self.codec.name.encode():  # (a peer that names none is served)
            # worded for both ends: the peer may be the one that reads it (as the close reason)
            side = self.engine.side.name.lower()
            why = f"codec mismatch: the {side} uses {self.codec.name!r}, its peer announced {theirs!r}"
            self._refuse(CloseCode.CODEC_MISMATCH, why, CodecMismatch)
            return
        refused = check_peer(self._schema, self.header(SCHEMA_HEADER), self._schema_check)
        if refused is not None:
            self._refuse(CloseCode.SCHEMA_MISMATCH, refused, SchemaMismatch)
            return
        if not self.ready.done():
            self.ready.set_result(self)

    def _refuse(self, code: CloseCode, why: str, error: type[ConnectionLost]) -> None:
        self.engine.close(code, why, now=self._loop.time())
        self._loop.call_soon(self._protocol.flush)
        if not self.ready.done():
            self.ready.set_exception(error(why, code))

    def accept_peer(self, identity: Any) -> None:
        """Server: the client passed authentication as `identity`; let the engine serve it."""
        if self.is_closed:
            return
        self.identity = identity
        self.engine.accept_peer(now=self._loop.time())
        self._protocol.flush()

    def refuse_peer(self, reason: str) -> None:
        """Server: the client failed authentication: close with AUTHENTICATION_FAILED."""
        if not self.is_closed:
            self._refuse(CloseCode.AUTHENTICATION_FAILED, reason, AuthenticationFailed)

    def _on_closed(self, ev: app.ConnectionClosed) -> None:
        client = self._protocol.side.name == "CLIENT"
        refused = refusal(ev.error_code, ev.reason, by_peer=ev.by_peer) if client else None
        if refused is not None and not self.ready.done():
            self.ready.set_exception(refused)
        if not self.ready.done():
            exc_type = {CloseCode.CODEC_MISMATCH: CodecMismatch, CloseCode.SCHEMA_MISMATCH: SchemaMismatch}.get(
                ev.error_code, ConnectionLost)  # type: ignore[call-overload]
            self.ready.set_exception(exc_type(ev.reason or "connection closed before it was ready", ev.error_code))
        if not self.closed.done():
            self.closed.set_result(ev)
        for handle in list(self._outcomes):
            self._settle_all(handle, Outcome.CONNECTION_LOST)
        for handle in list(self._bufs):  # the engine dropped its queues: what was taken ahead goes too
            self._forget_buffer(handle, discard=self._receiver_ended.get(handle) is not EndReason.FINISHED)
        for handle in list(self._waiters):
            self._wake(handle)

    def _forget_buffer(self, handle: int, *, discard: bool) -> None:
        """The receiver ended: stop tracking its prefetch buffer; `discard` empties it, as the engine its queue."""
        buf = self._bufs.pop(handle, None)
        self._prefetch.pop(handle, None)
        if discard:
            self._undecoded.pop(handle, None)
            if buf is not None:
                buf.clear()

    def _wake(self, handle: int) -> None:
        for fut in self._waiters.pop(handle, ()):
            if not fut.done():
                fut.set_result(None)

    async def _wait(self, handle: int) -> None:
        fut = self._loop.create_future()
        self._waiters.setdefault(handle, []).append(fut)
        await fut

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
                self._bind_moved(half, created)
        self._last_stream[handle] = result.stream_id
        self.stats.count_sent(delivery, len(payload))
        self._protocol.flush()
        return result

    def _blocked(self, handle: int, delivery: Delivery) -> bool:
        if delivery is Delivery.UNRELIABLE:
            return self._protocol.send_blocked(None)
        stream = self._last_stream.get(handle) if delivery is Delivery.ORDERED else None
        if stream is None:
            return self._protocol.new_stream_blocked()
        return self._protocol.send_blocked(stream)

    def send(self, handle: int, obj: Any, delivery: Delivery) -> Coroutine[Any, Any, None] | None:
        """Send; None if that is all, else a coroutine to await: it waits while the stream is over its send bound
        (and sends first, if it has not yet).

        The common case (no attachments, no recording, not over the bound) is this one function down to the
        engine's `send_plain`: no coroutine, no waiter, no SendResult. A message carrying halves that need
        not wait is sent at once too (`_send_now`), its halves bound before this returns."""
        payload, halves = self.codec.encode(obj)
        protocol = self._protocol
        engine = protocol.engine
        if self.recording is not None or engine is None or self.closed.done():
            return self._send_waiting(handle, payload, halves, delivery)
        if halves:
            if delivery is _UNRELIABLE or self._blocked(handle, delivery):
                return self._send_waiting(handle, payload, halves, delivery)
            stream = self._send_now(handle, payload, halves, delivery).stream_id
            if protocol.send_blocked(stream):
                return self._wait_while(lambda: protocol.send_blocked(stream))
            return None
        if delivery is _UNRELIABLE:
            if len(payload) > protocol.datagram_payload_limit:
                self._check_datagram(payload)
            queued = protocol.datagrams_queued
            if len(queued) >= DATAGRAM_QUEUE_LIMIT:
                return self._send_waiting(handle, payload, halves, delivery)
            engine.send_plain(handle, payload, delivery, self._loop.time())
            stats = self.stats
            stats.messages_sent += 1
            stats.bytes_sent += len(payload)
            stats.unreliable_sent += 1
            stats.unreliable_bytes_sent += len(payload)
            protocol.flush()
            if len(queued) >= DATAGRAM_QUEUE_LIMIT:
                return self._wait_while(lambda: protocol.send_blocked(None))
            return None
        else:
            last = self._last_stream.get(handle) if delivery is _ORDERED else None
            if last is None:
                if protocol.new_stream_blocked():
                    return self._send_waiting(handle, payload, halves, delivery)
            elif (
                last != self._clear_sid or protocol.stream_writes != self._clear_writes
            ) and protocol.send_blocked(last):
                return self._send_waiting(handle, payload, halves, delivery)
        stream = self._last_stream[handle] = engine.send_plain(handle, payload, delivery, self._loop.time())
        stats = self.stats
        stats.messages_sent += 1
        stats.bytes_sent += len(payload)
        if delivery is not _ORDERED:
            stats.unordered_sent += 1
            stats.unordered_bytes_sent += len(payload)
        protocol.flush()
        if protocol.send_blocked(stream):
            return self._wait_while(lambda: protocol.send_blocked(stream))
        self._clear_sid, self._clear_writes = stream, protocol.stream_writes
        return None

    async def _send_waiting(self, handle: int, payload: bytes, halves: list[Half], delivery: Delivery) -> None:
        """`send` when it must wait first, or carries attachments, or is recorded."""
        if delivery is Delivery.UNRELIABLE:
            self._check_datagram(payload)
        if self._blocked(handle, delivery):
            await self._wait_while(lambda: self._blocked(handle, delivery))
        stream = self._send_now(handle, payload, halves, delivery).stream_id
        if self._protocol.send_blocked(stream):
            await self._wait_while(lambda: self._protocol.send_blocked(stream))

    async def _wait_while(self, blocked: Any) -> None:
        try:
            await self._protocol.wait_while(blocked)
        except ConnectionLost:
            raise self._lost() from None

    def send_nowait(self, handle: int, obj: Any, delivery: Delivery, *, force: bool = False) -> None:
        """Send at once, or raise WouldBlock if the window is full (`force` skips that check)."""
        payload, halves = self.codec.encode(obj)
        if delivery is Delivery.UNRELIABLE:
            self._check_datagram(payload)
        if not force and self._blocked(handle, delivery):
            raise WouldBlock("the peer's window is full")
        self._send_now(handle, payload, halves, delivery)

    # ---- per-message outcomes (send(..., confirm=True)) ----
    async def send_confirmed(self, handle: int, obj: Any, delivery: Delivery) -> asyncio.Future[Outcome]:
        """Send (waiting while blocked, as `send`); the future resolves once the message's fate is known."""
        payload, halves = self.codec.encode(obj)
        if delivery is Delivery.UNRELIABLE:
            self._check_datagram(payload)
        if self._blocked(handle, delivery):
            await self._wait_while(lambda: self._blocked(handle, delivery))
        return self._confirm(handle, delivery, self._send_now(handle, payload, halves, delivery))

    def send_nowait_confirmed(
        self, handle: int, obj: Any, delivery: Delivery, *, force: bool = False
    ) -> asyncio.Future[Outcome]:
        """`send_nowait`, and a future of the message's outcome."""
        payload, halves = self.codec.encode(obj)
        if delivery is Delivery.UNRELIABLE:
            self._check_datagram(payload)
        if not force and self._blocked(handle, delivery):
            raise WouldBlock("the peer's window is full")
        return self._confirm(handle, delivery, self._send_now(handle, payload, halves, delivery))

    def _confirm(self, handle: int, delivery: Delivery, result: app.SendResult) -> asyncio.Future[Outcome]:
        fut: asyncio.Future[Outcome] = self._loop.create_future()
        ended = self._sender_ended.get(handle)
        if ended is not None:
            fut.set_result(OUTCOME_FOR_END[ended])
        else:
            self._outcomes.setdefault(handle, {})[(delivery is not Delivery.UNRELIABLE, result.number)] = fut
        return fut

    def _settle_run(self, ev: app.MessagesAcked | app.MessagesNacked) -> None:
        pending = self._outcomes.get(ev.sender)
        if not pending:
            return
        outcome = Outcome.ACKED if isinstance(ev, app.MessagesAcked) else Outcome.NACKED
        for key in [k for k in pending if k[0] == ev.reliable and ev.first <= k[1] < ev.stop]:
            fut = pending.pop(key)
            if not fut.done():
                fut.set_result(outcome)
        if not pending:
            del self._outcomes[ev.sender]

    def _settle_all(self, handle: int, outcome: Outcome) -> None:
        for fut in self._outcomes.pop(handle, {}).values():
            if not fut.done():
                fut.set_result(outcome)

    def finish(self, handle: int) -> None:
        """Finish a sender."""
        self._call(self.engine.finish, handle)

    def cancel(self, handle: int) -> None:
        """Cancel a sender (its confirmed messages still unanswered end CANCELLED, though the engine nacks them)."""
        if handle in self._outcomes:
            self._settle_all(handle, Outcome.CANCELLED)
        self._call(self.engine.cancel, handle)

    def close_receiver(self, handle: int) -> None:
        """Close a receiver, discarding what it prefetched."""
        self._forget_buffer(handle, discard=True)
        self._call(self.engine.close_receiver, handle)

    def _call(self, method: Any, handle: int) -> None:
        if self.closed.done():
            return
        method(handle, now=self._loop.time())
        self._protocol.flush()

    def drop_sender(self, handle: int) -> None:
        """A Sender object was garbage-collected (from `__del__`: may run anywhere, so defer)."""
        self._defer_drop(handle, False)

    def drop_receiver(self, handle: int) -> None:
        """A Receiver object was garbage-collected."""
        self._defer_drop(handle, True)

    def _defer_drop(self, handle: int, receiver: bool) -> None:
        """Queue a drop for the loop: a collection may run inside any code, even the engine's, or on another
        thread. One callback takes every drop queued before it runs; only another thread needs
        call_soon_threadsafe (its self-pipe write wakes the loop). The flag is cleared before the batch is
        taken, so a drop queued meanwhile schedules another (at worst empty) batch, never none."""
        self._drops.append((handle, receiver))
        if self._drop_scheduled:
            return
        self._drop_scheduled = True
        loop = self._loop
        try:
            if asyncio._get_running_loop() is loop:
                loop.call_soon(self._run_drops)
            else:
                loop.call_soon_threadsafe(self._run_drops)
        except RuntimeError:  # the loop is closed: nothing left to tell
            pass

    def _run_drops(self) -> None:
        self._drop_scheduled = False
        drops = self._drops
        if self.closed.done():
            drops.clear()
            return
        engine, now = self.engine, self._loop.time()
        while drops:
            handle, receiver = drops.popleft()
            if self.recording is not None:
                self.recording.on_dropped(handle, receiver)  # (the engine reports no end for a dropped half)
            try:
                if receiver:
                    self._forget_buffer(handle, discard=True)
                    engine.drop_receiver(handle, now=now)
                else:
                    engine.drop_sender(handle, now=now)
            except ChannelError:
                pass
        self._protocol.flush()

    # ---- Link: receiving ----
    async def fill(self, handle: int, buf: deque[Prefetched]) -> None:
        """Move the next queued messages of a receiver, decoded, into its (empty) `buf`, waiting for one;
        StopAsyncIteration after a finish; typed errors otherwise.

        Taking a batch (bounded: PREFETCH_MESSAGES, PREFETCH_BYTES) makes `async for` a popleft per message
        in the common case. Credit goes back as messages leave the engine, as before; attachments are bound
        to new halves now. What a receiver holds is discarded like the engine's queue: on close, on a cancel
        or loss, and when the connection ends."""
        while True:
            if self._take(handle, buf):
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

    def _take(self, handle: int, buf: deque[Prefetched]) -> bool:
        """Take a batch into `buf`; False if the engine had none. Raises a decode error in its message's turn."""
        failed = self._undecoded.pop(handle, None)
        if failed is not None:  # a message of the last batch did not decode: its error comes now, then the rest
            exc, rest = failed
            self._decode_into(handle, rest, buf)
            raise exc
        taken = self.engine.take_many(handle, self._prefetch.get(handle, PREFETCH_MESSAGES), self._loop.time())
        if not taken:
            return False
        self._protocol.flush_soon()  # (a take writes only credit and acks: they can wait for the turn's end)
        self._bufs[handle] = buf
        self._decode_into(handle, taken, buf)
        return True if buf else self._take(handle, buf)  # (the first one failed: raise its error)

    def _decode_into(self, handle: int, taken: Sequence[app.Delivered], buf: deque[Prefetched]) -> None:
        decode, recording = self.codec.decode, self.recording
        nbytes = biggest = 0
        append = buf.append
        for i, d in enumerate(taken):
            payload, attachments = d.payload, d.attachments
            size = len(payload)
            nbytes += size
            if size > biggest:
                biggest = size
            halves: Sequence[Half] = (
                [networked_half(self, a.handle, is_sender=a.is_sender, oneshot=ChannelId(a.channel).oneshot)
                 for a in attachments]
                if attachments
                else ()
            )
            if recording is not None:
                recording.on_received(d)
            if d.delivery is not _ORDERED:
                self.stats.count_received_apart(d.delivery, size)
            try:
                append((decode(payload, halves), d.delivery, d.number))
            except Exception as exc:  # the codec refused it: the application gets the error in this message's turn
                self._undecoded[handle] = (exc, taken[i + 1 :])
                self._count_received(i + 1, nbytes)
                return
        self._count_received(len(taken), nbytes)
        self._prefetch[handle] = max(1, min(PREFETCH_MESSAGES, PREFETCH_BYTES // max(1, biggest)))

    def _count_received(self, messages: int, nbytes: int) -> None:
        self.stats.messages_received += messages
        self.stats.bytes_received += nbytes

    async def sender_ended(self, handle: int) -> EndReason:
        """Wait until the engine ends a sender; its reason."""
        while True:
            reason = self._sender_ended.get(handle)
            if reason is not None:
                return reason
            if self.closed.done():
                return EndReason.CONNECTION_LOST
            await self._wait(handle)

    # ---- moving halves ----
    def _bind_moved(self, half: Half, created: int) -> None:
        """`half` went to the peer; wire what stays here to the engine handle `created`."""
        if isinstance(half, Sender):
            pipe = half._pipe
            if pipe is not None:
                rx = pipe.receiver() if pipe.receiver is not None else None
                half._mark_moved()
                if rx is None or rx._done is not None or pipe.receiver_gone:
                    self.drop_receiver(created)
                else:
                    rx._bind(self, created)
            else:
                inner = _take_over_sender(half)
                self._spawn(relay(networked_receiver(self, created), inner))
        else:
            pipe = half._pipe
            if pipe is not None and half._link is None:
                tx = pipe.sender() if pipe.sender is not None else None
                queued, ended = list(pipe.items), pipe.ended
                pipe.items.clear()
                half._mark_moved()
                for msg in queued:
                    local = pipe.confirms.pop(msg.number, None)
                    if local is None:
                        self.send_nowait(created, msg.value, msg.delivery, force=True)
                    else:  # a confirmed message queued before its channel moved: its fate is the network's
                        remote = self.send_nowait_confirmed(created, msg.value, msg.delivery, force=True)
                        remote.add_done_callback(functools.partial(_pass_on, local))
                if tx is not None and tx._done is None:
                    tx._bind(self, created)
                elif ended is EndReason.FINISHED:
                    self.finish(created)
                else:
                    self.cancel(created)
            else:
                inner_rx = _take_over_receiver(half)
                self._spawn(relay(inner_rx, networked_sender(self, created)))

    def _spawn(self, coro: Any) -> None:
        task = self._loop.create_task(coro)
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
        if code == 0 and isinstance(ep, Sender) and ep._done is None and ep._handle is not None and not self.is_closed:
            handle = ep._handle
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


def _pass_on(to: asyncio.Future[Outcome], done: asyncio.Future[Outcome]) -> None:
    if not to.done():
        to.set_result(done.result())


def _take_over_sender(half: Sender[Any]) -> Sender[Any]:
    """A fresh Sender owning `half`'s network handle; `half` is marked moved."""
    link, handle = half._link, half._handle
    assert link is not None and handle is not None
    half._mark_moved()
    return networked_sender(link, handle)


def _take_over_receiver(half: Receiver[Any]) -> Receiver[Any]:
    """A fresh Receiver owning `half`'s source (pipe leftovers and network handle); `half` is marked moved."""
    fresh: Receiver[Any] = Receiver()
    fresh._pipe = half._pipe
    fresh._buf, half._buf = half._buf, fresh._buf  # what it prefetched goes first
    link, handle = half._link, half._handle
    half._mark_moved()
    if link is not None and handle is not None:
        fresh._bind(link, handle)
    return fresh


async def relay(src: Receiver[Any], dst: Sender[Any]) -> None:
    """Forward a channel we hold both ends of (a networked half sent on): messages, then finish or cancel."""
    try:
        while True:
            try:
                msg = await src.recv_message()
            except StopAsyncIteration:
                await dst.finish()
                return
            await dst.send(msg.value, mode=msg.delivery)
    except ReceiverDropped:
        src.close()
    except ChannelError:
        with contextlib.suppress(ChannelError):
            dst.cancel()
        src.close()

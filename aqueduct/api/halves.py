"""Sender and Receiver: the two halves of a channel, local or networked.

A pair from `channel()` starts as an in-process channel: both halves share a
`_Pipe` (a bounded queue plus end flags), so code runs without a network.
When a half is sent inside a message on a connection, the codec hands it to
the connection, which asks the engine for a new channel and *binds* the half
that stayed here to the engine handle it got back (`_bind`); the moved half
becomes unusable. A receiver keeps what was already queued in its pipe and
returns it first; a sender's queued-but-unread messages are forwarded onto
the network channel. A half that is already networked (bound to another
channel) is forwarded by a relay task instead. A networked receiver reads
from a small deque its connection fills a batch at a time (ConnectionLink.fill).

Typed channels: `channel(T)` gives both halves the spec of T (validation.py). A typed Sender checks each
value before it is queued or sent (ValidationError, nothing sent) and hands the codec its builtins; a
typed Receiver converts what arrives from the network into T (a local pipe already holds T objects). A
received message that does not fit is dropped (it was taken, so it is acknowledged as processed) and, by
the receiver's `on_invalid` policy, raised from `recv` ("raise", the default), skipped ("drop"), or
raised after closing the receiver ("close"). Oneshot halves carry one message: the channel ID's oneshot
bit on the wire, a capacity-one pipe locally.

Dropping a half (garbage collection) ends it like the engine does: an
unfinished sender cancels, a receiver closes. That is `__del__` on the
slotted halves, guarded by one flag (`_drops`: cleared once a half is moved,
or a local half ended by hand): no finalizer object or weak method per half.
A networked half tells its link, which defers the engine call (a collection
may run anywhere); a local half tells its pipe at once, as before.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Coroutine
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, Literal, Protocol, TypeVar, overload

from ..core.app import AttachKind, Delivery
from ..errors import (
    ERROR_FOR_REASON,
    ChannelClosed,
    EndReason,
    Lagged,
    Outcome,
    ReceiverDropped,
    Timeout,
    ValidationError,
    WouldBlock,
)
from .validation import TypeSpec, register_half_types, spec_for

T = TypeVar("T")
R = TypeVar("R")
OnInvalid = Literal["raise", "drop", "close"]
_SKIPPED: Any = object()
"""What `_typed_next` returns for an invalid message its receiver's policy drops."""

DEFAULT_LOCAL_CAPACITY = 1024
ModeLike = Delivery | str
Prefetched = tuple[Any, Delivery, int]
"""A message a networked receiver took from its engine ahead of the application: (value, delivery, number)."""


def as_delivery(mode: ModeLike) -> Delivery:
    """Accept a Delivery or its name ("ordered", "unordered", "unreliable")."""
    return mode if isinstance(mode, Delivery) else Delivery(mode)


@dataclass(frozen=True)
class Message(Generic[T]):
    """A received message: the decoded value and how it travelled."""

    value: T
    delivery: Delivery = Delivery.ORDERED
    number: int = 0


async def within(seconds: float | None, aw: Awaitable[R], what: str) -> R:
    """`await aw`, or Timeout after `seconds` (None: no limit)."""
    if seconds is None:
        return await aw
    try:
        async with asyncio.timeout(seconds):
            return await aw
    except TimeoutError:
        raise Timeout(f"{what}: no result within {seconds} s") from None


class Link(Protocol):
    """What a networked half needs from its connection (implemented by api.connection)."""

    def send(self, handle: int, obj: Any, delivery: Delivery) -> Coroutine[Any, Any, None] | None: ...
    def channel_name(self, handle: int) -> str: ...
    async def send_confirmed(self, handle: int, obj: Any, delivery: Delivery) -> asyncio.Future[Outcome]: ...
    def send_nowait_confirmed(self, handle: int, obj: Any, delivery: Delivery) -> asyncio.Future[Outcome]: ...
    def send_nowait(self, handle: int, obj: Any, delivery: Delivery, *, force: bool = False) -> None: ...
    def finish(self, handle: int) -> None: ...
    def cancel(self, handle: int) -> None: ...
    async def fill(self, handle: int, buf: deque[Prefetched]) -> None: ...
    async def sender_ended(self, handle: int) -> EndReason: ...
    def close_receiver(self, handle: int) -> None: ...
    def drop_sender(self, handle: int) -> None: ...
    def drop_receiver(self, handle: int) -> None: ...


class _Pipe:
    """Shared state of an in-process channel."""

    __slots__ = ("_waiters", "capacity", "confirms", "count", "ended", "items", "receiver", "receiver_gone", "sender")

    def __init__(self, capacity: int) -> None:
        self.items: deque[Message[Any]] = deque()
        self.capacity = capacity
        self.ended: EndReason | None = None
        self.receiver_gone = False
        self.count = 0
        self.sender: weakref.ref[Sender[Any]] | None = None
        self.receiver: weakref.ref[Receiver[Any]] | None = None
        self._waiters: list[asyncio.Future[None]] = []
        self.confirms: dict[int, asyncio.Future[Outcome]] = {}
        """Message number -> outcome future of a queued message sent with confirm=True."""

    def wake(self) -> None:
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(None)
        self._waiters.clear()

    async def wait(self) -> None:
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        await fut

    def end(self, reason: EndReason) -> None:
        """The sender ended; a cancel discards what is queued (as on the network: only a finish delivers it)."""
        if self.ended is None:
            self.ended = reason
            if reason is not EndReason.FINISHED:
                self.items.clear()
                self.settle_all(Outcome.CANCELLED)
            self.wake()

    def taken(self, msg: Message[Any]) -> None:
        """The receiver took `msg`: a confirmed send learns it was delivered."""
        fut = self.confirms.pop(msg.number, None)
        if fut is not None and not fut.done():
            fut.set_result(Outcome.ACKED)

    def settle_all(self, outcome: Outcome) -> None:
        confirms, self.confirms = self.confirms, {}
        for fut in confirms.values():
            if not fut.done():
                fut.set_result(outcome)

    def sender_dropped(self) -> None:
        self.end(EndReason.CANCELLED)

    def receiver_dropped(self) -> None:
        self.receiver_gone = True
        self.items.clear()
        self.settle_all(Outcome.RECEIVER_DROPPED)
        self.wake()


def _raise_end(reason: EndReason | None, what: str) -> None:
    if reason is None or reason is EndReason.FINISHED:
        raise StopAsyncIteration
    raise ERROR_FOR_REASON[reason](f"{what}: {reason.value}")


class _Half:
    """What both halves share: where they talk (a local pipe or a network link) and what dropping one does."""

    __slots__ = ("__weakref__", "_done", "_drops", "_handle", "_link", "_pipe", "_spec")

    def __init__(self) -> None:
        self._drops = False
        """Whether collecting this half must end its channel (set by `_set_pipe`/`_bind`, cleared when moved
        or when a local half was ended by hand; a networked half keeps it: its drop lets the engine forget)."""
        self._pipe: _Pipe | None = None
        self._link: Link | None = None
        self._handle: int | None = None
        self._done: str | None = None
        self._spec: TypeSpec | None = None
        """The message type's spec (validation.py), or None: any value, nothing checked."""

    def __del__(self) -> None:
        if self._drops:
            self._dropped()

    def _dropped(self) -> None:
        raise NotImplementedError

    @property
    def networked(self) -> bool:
        """Whether this half talks to a channel on a connection."""
        return self._link is not None

    @property
    def message_type(self) -> Any:
        """The type every message on this channel has (Any: untyped)."""
        return self._spec.tp if self._spec is not None else Any

    def _adopt(self, spec: TypeSpec | None) -> None:
        """Take the message type a typed message declares for this (untyped) half, and so does its partner."""
        self._spec = spec
        pipe = self._pipe
        if pipe is not None:
            ref = pipe.receiver if isinstance(self, Sender) else pipe.sender
            partner = ref() if ref is not None else None
            if partner is not None and partner._spec is None:
                partner._spec = spec

    def _where(self) -> str:
        if self._link is not None and self._handle is not None:
            return self._link.channel_name(self._handle)
        return "a local channel"


class Sender(_Half, Generic[T]):
    """The sending half of a channel: `send`, `try_send`, `finish`, `cancel`; `async with` finishes."""

    __slots__ = ("_group", "mode")

    def __init__(self, *, mode: ModeLike = Delivery.ORDERED) -> None:
        super().__init__()
        self.mode = as_delivery(mode)
        self._group: _Clones | None = None
        """The clones this sender shares its channel with (`clone`), or None."""

    # ---- wiring ----
    def _set_pipe(self, pipe: _Pipe) -> None:
        self._pipe = pipe
        pipe.sender = weakref.ref(self)
        self._drops = True

    def _bind(self, link: Link, handle: int) -> None:
        """From now on this half (and every clone of it) sends on the network channel `handle` of `link`."""
        for member in self._group.members() if self._group is not None else (self,):
            member._pipe = None
            member._link, member._handle = link, handle
            if member._done is None or self._group is None:
                member._drops = True

    def clone(self) -> Sender[T]:
        """Another Sender of this channel, for another producer; the channel finishes when the last clone
        finishes or is dropped (a cancel by any clone cancels it for all). A cloned sender stays here: it
        cannot travel in a message."""
        self._check()
        if isinstance(self, OneshotSender):
            raise ChannelClosed("a oneshot sender carries one message: it cannot be cloned")
        group = self._group if self._group is not None else _Clones(self)
        twin: Sender[T] = type(self)(mode=self.mode)
        twin._pipe, twin._link, twin._handle, twin._spec = self._pipe, self._link, self._handle, self._spec
        twin._group, twin._drops = group, True
        group.add(twin)
        return twin

    def _dropped(self) -> None:
        group = self._group
        if group is not None:
            if not group.release(self):
                return  # other clones still send on this channel
            if self._link is not None:  # the last clone gone: the channel finishes (a lone sender cancels)
                self._link.finish(self._handle)  # type: ignore[arg-type]
            elif self._pipe is not None:
                self._pipe.end(EndReason.FINISHED)
                return
        link = self._link
        if link is not None:
            link.drop_sender(self._handle)  # type: ignore[arg-type]
        elif self._pipe is not None:
            self._pipe.sender_dropped()

    def _mark_moved(self) -> None:
        self._drops = False
        self._done = "moved into a message"
        self._pipe = None
        self._link = self._handle = None

    def _check(self) -> None:
        if self._done is not None:
            raise ChannelClosed(f"sender is {self._done}")

    # ---- API ----
    @overload
    async def send(
        self, obj: T, mode: ModeLike | None = ..., *, timeout: float | None = ..., confirm: Literal[False] = ...
    ) -> None: ...
    @overload
    async def send(
        self, obj: T, mode: ModeLike | None = ..., *, timeout: float | None = ..., confirm: Literal[True]
    ) -> Outcome: ...
    async def send(
        self, obj: T, mode: ModeLike | None = None, *, timeout: float | None = None, confirm: bool = False
    ) -> Outcome | None:
        """Send `obj`; waits while the peer's window (or the local queue) is full (Timeout after `timeout` s).

        On a typed channel a value that is not a T raises ValidationError and nothing is sent. With
        `confirm=True` it also waits for the message's fate and returns it (`Outcome.ACKED`, or how it
        was lost: nacked, cancelled, receiver dropped, connection lost, creating message lost)."""
        if timeout is not None:
            what = f"send on {self._where()}"
            if confirm:
                return await within(timeout, self.send(obj, mode, confirm=True), what)
            await within(timeout, self.send(obj, mode), what)
            return None
        if confirm:
            return await (await self._send_confirmed(obj, mode))
        delivery = self.mode if mode is None else as_delivery(mode)
        wire: Any = obj if self._spec is None else self._spec.check(obj, self._where)
        while True:
            link = self._link
            if link is not None and self._done is None:  # networked: one call; a wait only if one is due
                waiting = link.send(self._handle, wire, delivery)  # type: ignore[arg-type]
                if waiting is not None:
                    await waiting
                return None
            self._check()
            pipe = self._pipe
            assert pipe is not None
            if pipe.receiver_gone:
                raise ReceiverDropped("the receiver was closed or dropped")
            if len(pipe.items) < pipe.capacity:
                self._push(pipe, obj, delivery)
                return None
            await pipe.wait()

    async def _send_notice(self, notice: LagNotice) -> None:
        """Send an in-band notice (not a T: no type check) in order with the messages (broadcast's Lagged)."""
        while True:
            link = self._link
            if link is not None and self._done is None:
                waiting = link.send(self._handle, notice, Delivery.ORDERED)  # type: ignore[arg-type]
                if waiting is not None:
                    await waiting
                return
            self._check()
            pipe = self._pipe
            assert pipe is not None
            if pipe.receiver_gone:
                raise ReceiverDropped("the receiver was closed or dropped")
            if len(pipe.items) < pipe.capacity:
                self._push(pipe, notice, Delivery.ORDERED)
                return
            await pipe.wait()

    async def _send_confirmed(self, obj: T, mode: ModeLike | None) -> asyncio.Future[Outcome]:
        """Send one message (waiting while blocked) and return the future of its outcome."""
        while True:
            try:
                return self.try_send(obj, mode, confirm=True)
            except WouldBlock:
                link = self._link
                if link is not None:  # (the networked wait: send_confirmed waits, then sends)
                    assert self._handle is not None
                    delivery = self.mode if mode is None else as_delivery(mode)
                    wire: Any = obj if self._spec is None else self._spec.check(obj, self._where)
                    return await link.send_confirmed(self._handle, wire, delivery)
                assert self._pipe is not None
                await self._pipe.wait()

    @overload
    def try_send(self, obj: T, mode: ModeLike | None = ..., *, confirm: Literal[False] = ...) -> None: ...
    @overload
    def try_send(self, obj: T, mode: ModeLike | None = ..., *, confirm: Literal[True]) -> asyncio.Future[Outcome]: ...
    def try_send(
        self, obj: T, mode: ModeLike | None = None, *, confirm: bool = False
    ) -> asyncio.Future[Outcome] | None:
        """Send `obj` now, or raise WouldBlock if the window (or local queue) is full.

        With `confirm=True` it returns a future of the message's Outcome."""
        if confirm:
            return self._try_send_confirmed(obj, mode)
        delivery = self.mode if mode is None else as_delivery(mode)
        self._check()
        wire: Any = obj if self._spec is None else self._spec.check(obj, self._where)
        if self._link is not None:
            assert self._handle is not None
            self._link.send_nowait(self._handle, wire, delivery)
            return None
        pipe = self._pipe
        assert pipe is not None
        if pipe.receiver_gone:
            raise ReceiverDropped("the receiver was closed or dropped")
        if len(pipe.items) >= pipe.capacity:
            raise WouldBlock("local channel queue is full")
        self._push(pipe, obj, delivery)
        return None

    def _try_send_confirmed(self, obj: T, mode: ModeLike | None) -> asyncio.Future[Outcome]:
        delivery = self.mode if mode is None else as_delivery(mode)
        self._check()
        wire: Any = obj if self._spec is None else self._spec.check(obj, self._where)
        if self._link is not None:
            assert self._handle is not None
            return self._link.send_nowait_confirmed(self._handle, wire, delivery)
        pipe = self._pipe
        assert pipe is not None
        if pipe.receiver_gone:
            raise ReceiverDropped("the receiver was closed or dropped")
        if len(pipe.items) >= pipe.capacity:
            raise WouldBlock("local channel queue is full")
        fut: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        pipe.confirms[pipe.count] = fut
        self._push(pipe, obj, delivery)
        return fut

    @staticmethod
    def _push(pipe: _Pipe, obj: Any, delivery: Delivery) -> None:
        pipe.items.append(Message(obj, delivery, pipe.count))
        pipe.count += 1
        pipe.wake()

    async def ended(self) -> EndReason:
        """Wait until this channel can take no more messages and say why (e.g. RECEIVER_DROPPED)."""
        while True:
            if self._link is not None:
                assert self._handle is not None
                return await self._link.sender_ended(self._handle)
            pipe = self._pipe
            if pipe is None:
                return EndReason.CLOSED
            if pipe.receiver_gone:
                return EndReason.RECEIVER_DROPPED
            await pipe.wait()

    async def finish(self) -> None:
        """Gracefully end the channel: the receiver gets every message, then the end."""
        self._end(EndReason.FINISHED)

    def cancel(self) -> None:
        """Abruptly end the channel: the receiver sees ChannelCancelled."""
        self._end(EndReason.CANCELLED)

    def _end(self, reason: EndReason) -> None:
        self._check()
        group = self._group
        if group is not None:
            if reason is EndReason.FINISHED and not group.release(self):
                self._drops, self._done = False, "finished"  # the others go on; the last one finishes
                return
            for member in group.members():  # the channel ends for every clone
                if member is not self:
                    member._drops, member._done = False, self._done or "cancelled"
        # a networked sender keeps its drop: dropping it lets the engine forget the ended channel
        if self._link is None:
            self._drops = False
        if self._link is not None:
            assert self._handle is not None
            (self._link.finish if reason is EndReason.FINISHED else self._link.cancel)(self._handle)
        elif self._pipe is not None:
            self._pipe.end(reason)
        self._done = "finished" if reason is EndReason.FINISHED else "cancelled"

    async def __aenter__(self) -> Sender[T]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._done is not None:
            return
        if exc_type is None:
            await self.finish()
        else:
            self.cancel()

    def __repr__(self) -> str:
        where = "networked" if self._link is not None else "local"
        return f"<Sender {where} {self._done or 'open'}>"


class Receiver(_Half, Generic[T]):
    """The receiving half of a channel: `recv`, `async for`, `close`."""

    __slots__ = ("_buf", "on_invalid")

    def __init__(self) -> None:
        super().__init__()
        self._buf: deque[Prefetched] = deque()
        """Messages a networked receiver took from the engine ahead of the application (ConnectionLink.fill)."""
        self.on_invalid: OnInvalid = "raise"
        """What a received message that does not fit the channel's type does: ValidationError from `recv`
        ("raise"), nothing ("drop": skipped), or ValidationError after closing this receiver ("close")."""

    def _set_pipe(self, pipe: _Pipe) -> None:
        self._pipe = pipe
        pipe.receiver = weakref.ref(self)
        self._drops = True

    def _bind(self, link: Link, handle: int) -> None:
        """From now on (after what is already queued locally) this half reads network channel `handle`."""
        self._link, self._handle = link, handle
        self._drops = True
        if self._pipe is not None:
            self._pipe.wake()

    def _dropped(self) -> None:
        link = self._link
        if link is not None:  # (what is left in a pipe it still drains came from a sender that was moved)
            link.drop_receiver(self._handle)  # type: ignore[arg-type]
        elif self._pipe is not None:
            self._pipe.receiver_dropped()

    def _mark_moved(self) -> None:
        self._drops = False
        self._done = "moved into a message"
        if self._pipe is not None:
            self._pipe.wake()
        self._link = self._handle = None

    async def recv_message(self, *, timeout: float | None = None) -> Message[T]:
        """The next message with its delivery mode; StopAsyncIteration after a finish, typed errors otherwise."""
        if timeout is not None:
            return await within(timeout, self.recv_message(), f"recv on {self._where()}")
        while True:
            if self._done is not None:
                raise ChannelClosed(f"receiver is {self._done}")
            buf = self._buf
            if buf:
                value, delivery, number = buf[0]
                if self._spec is not None:
                    value = self._typed_next(self._spec)
                    if value is _SKIPPED:
                        continue
                else:
                    buf.popleft()
                return Message(value, delivery, number)
            pipe = self._pipe
            if pipe is not None and pipe.items:
                msg = pipe.items.popleft()
                if pipe.confirms:
                    pipe.taken(msg)
                pipe.wake()
                if type(msg.value) is LagNotice:
                    raise Lagged(msg.value.n)
                return msg
            if self._link is not None:
                assert self._handle is not None
                await self._link.fill(self._handle, buf)
                continue
            assert pipe is not None
            if pipe.ended is not None:
                _raise_end(pipe.ended, "channel")
            await pipe.wait()

    async def recv(self, *, timeout: float | None = None) -> T:
        """The next message's value (StopAsyncIteration at the end after a finish; Timeout after `timeout` s)."""
        buf = self._buf
        if buf and timeout is None:  # (empty once closed or moved)
            spec = self._spec
            if spec is None:
                return buf.popleft()[0]  # type: ignore[no-any-return]
            value = self._typed_next(spec)
            if value is not _SKIPPED:
                return value  # type: ignore[no-any-return]
        return (await self.recv_message(timeout=timeout)).value

    def _typed_next(self, spec: TypeSpec) -> Any:
        """Take the next prefetched message converted to the channel's type; _SKIPPED if `on_invalid` drops it.

        An invalid message is taken too: it was acknowledged as processed when the engine gave it up."""
        value = self._buf.popleft()[0]
        try:
            return spec.convert(value, self._where)
        except ValidationError:
            _discard_halves(value)  # the halves it carried go with it, at once (not when collected)
            if self.on_invalid == "drop":
                return _SKIPPED
            if self.on_invalid == "close":
                self.close()
            raise

    def close(self) -> None:
        """Stop receiving: the sender sees ReceiverDropped; queued messages are discarded."""
        if self._done is not None:
            return
        # a networked receiver keeps its drop: dropping it lets the engine forget the closed channel
        if self._link is None:
            self._drops = False
        if self._link is not None:
            assert self._handle is not None
            self._link.close_receiver(self._handle)  # (which discards what was prefetched too)
        if self._pipe is not None:
            self._pipe.receiver_dropped()
        self._done = "closed"

    def __aiter__(self) -> AsyncIterator[T]:
        return self

    async def __anext__(self) -> T:
        buf = self._buf
        if buf:  # the common case on a busy channel: what the last fill took
            spec = self._spec
            if spec is None:
                return buf.popleft()[0]  # type: ignore[no-any-return]
            value = self._typed_next(spec)
            if value is not _SKIPPED:
                return value  # type: ignore[no-any-return]
        return (await self.recv_message()).value  # (not via recv: one coroutine less per message)

    async def __aenter__(self) -> Receiver[T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "networked" if self._link is not None else "local"
        return f"<Receiver {where} {self._done or 'open'}>"


class _Clones:
    """The senders sharing one channel (`Sender.clone`): how many are still open, and who they are."""

    __slots__ = ("_members", "open")

    def __init__(self, first: Sender[Any]) -> None:
        first._group = self
        self._members: weakref.WeakSet[Sender[Any]] = weakref.WeakSet([first])
        self.open = 1

    def add(self, twin: Sender[Any]) -> None:
        self._members.add(twin)
        self.open += 1

    def members(self) -> list[Sender[Any]]:
        return list(self._members)

    def release(self, member: Sender[Any]) -> bool:
        """`member` is done (finished or dropped); True if it was the last open one."""
        self.open -= 1
        pipe = member._pipe
        if self.open > 0 and pipe is not None and pipe.sender is not None and pipe.sender() is member:
            other = next((m for m in self._members if m is not member and m._done is None), None)
            if other is not None:  # the pipe's own sender went: a moving receiver binds another clone
                pipe.sender = weakref.ref(other)
        return self.open <= 0


class OneshotSender(Sender[T]):
    """The sending half of a oneshot channel: exactly one `send`, which also finishes the channel."""

    __slots__ = ()

    @overload
    async def send(
        self, obj: T, mode: ModeLike | None = ..., *, timeout: float | None = ..., confirm: Literal[False] = ...
    ) -> None: ...
    @overload
    async def send(
        self, obj: T, mode: ModeLike | None = ..., *, timeout: float | None = ..., confirm: Literal[True]
    ) -> Outcome: ...
    async def send(
        self, obj: T, mode: ModeLike | None = None, *, timeout: float | None = None, confirm: bool = False
    ) -> Outcome | None:
        """Send the one message (ChannelClosed if it was sent already); the channel is then finished."""
        self._check()
        if confirm:
            fut = self._try_send_confirmed(obj, mode)  # (a oneshot pipe or a fresh channel has room)
            self._sent_one()
            return await within(timeout, fut, f"send on {self._where()}")
        await super().send(obj, mode, timeout=timeout)
        self._sent_one()
        return None

    def _sent_one(self) -> None:
        if self._link is None:  # (on a connection the engine finishes a oneshot channel after its message)
            self._end(EndReason.FINISHED)
        else:
            self._done = "finished"

    @overload
    def try_send(self, obj: T, mode: ModeLike | None = ..., *, confirm: Literal[False] = ...) -> None: ...
    @overload
    def try_send(self, obj: T, mode: ModeLike | None = ..., *, confirm: Literal[True]) -> asyncio.Future[Outcome]: ...
    def try_send(
        self, obj: T, mode: ModeLike | None = None, *, confirm: bool = False
    ) -> asyncio.Future[Outcome] | None:
        """Send the one message now, or WouldBlock."""
        fut = super().try_send(obj, mode, confirm=True) if confirm else super().try_send(obj, mode)
        self._sent_one()
        return fut

    def __repr__(self) -> str:
        return "<Oneshot" + super().__repr__()[1:]


class OneshotReceiver(Receiver[T]):
    """The receiving half of a oneshot channel: `recv` gives the one message."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<Oneshot" + super().__repr__()[1:]


register_half_types(Sender, Receiver, OneshotSender, OneshotReceiver)

Half = Sender[Any] | Receiver[Any]


@dataclass(frozen=True, slots=True)
class LagNotice:
    """In-band notice that a broadcast subscriber missed `n` messages: its receiver raises Lagged(n) for it
    (locally it travels in the pipe; on a connection as a CBOR tag the codec turns back into Lagged)."""

    n: int


def _discard_halves(value: Any) -> None:
    """End every half inside a received value that is being dropped: senders cancel, receivers close."""
    if isinstance(value, Sender):
        if value._done is None:
            value.cancel()
    elif isinstance(value, Receiver):
        value.close()
    elif isinstance(value, dict):
        for item in value.values():
            _discard_halves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _discard_halves(item)


@overload
def channel(
    mode: ModeLike = ..., /, *, capacity: int = ..., on_invalid: OnInvalid = ...
) -> tuple[Sender[Any], Receiver[Any]]: ...
@overload
def channel(
    *, mode: ModeLike, capacity: int = ..., on_invalid: OnInvalid = ...
) -> tuple[Sender[Any], Receiver[Any]]: ...
@overload
def channel(
    message_type: type[T], mode: ModeLike = ..., capacity: int = ..., *, on_invalid: OnInvalid = ...
) -> tuple[Sender[T], Receiver[T]]: ...
def channel(
    message_type: Any = None,
    mode: ModeLike = Delivery.ORDERED,
    capacity: int = DEFAULT_LOCAL_CAPACITY,
    *,
    on_invalid: OnInvalid = "raise",
) -> tuple[Sender[Any], Receiver[Any]]:
    """A new channel as (Sender, Receiver); in-process until a half is sent inside a message.

    `channel(T)`: every message is a T, checked before sending and converted on arrival; `channel()`: any
    value. (`channel("unordered")` still names a mode: a string or Delivery first is the mode.)"""
    if isinstance(message_type, str | Delivery):
        message_type, mode = None, message_type
    tx: Sender[Any] = Sender(mode=mode)
    rx: Receiver[Any] = Receiver()
    _pair(tx, rx, message_type, capacity)
    rx.on_invalid = on_invalid
    return tx, rx


@overload
def oneshot() -> tuple[OneshotSender[Any], OneshotReceiver[Any]]: ...
@overload
def oneshot(message_type: type[T]) -> tuple[OneshotSender[T], OneshotReceiver[T]]: ...
def oneshot(message_type: Any = None) -> tuple[OneshotSender[Any], OneshotReceiver[Any]]:
    """A oneshot channel: one message, then finished (the spec's oneshot channel ID bit on the wire)."""
    tx: OneshotSender[Any] = OneshotSender()
    rx: OneshotReceiver[Any] = OneshotReceiver()
    _pair(tx, rx, message_type, 1)
    return tx, rx


def _pair(tx: Sender[Any], rx: Receiver[Any], message_type: Any, capacity: int) -> None:
    pipe = _Pipe(capacity)
    tx._spec = rx._spec = spec_for(message_type) if message_type is not None else None
    tx._set_pipe(pipe)
    rx._set_pipe(pipe)


def networked_half(link: Link, handle: int, *, is_sender: bool, oneshot: bool = False) -> Half:
    """A half bound to a network channel (an attachment we received); untyped until a message type types it."""
    half: Half
    if is_sender:
        half = OneshotSender() if oneshot else Sender()
    else:
        half = OneshotReceiver() if oneshot else Receiver()
    half._bind(link, handle)
    return half


def networked_sender(link: Link, handle: int) -> Sender[Any]:
    """A Sender bound to a network channel."""
    tx: Sender[Any] = Sender()
    tx._bind(link, handle)
    return tx


def networked_receiver(link: Link, handle: int) -> Receiver[Any]:
    """A Receiver bound to a network channel."""
    rx: Receiver[Any] = Receiver()
    rx._bind(link, handle)
    return rx


_KINDS = {Sender: AttachKind.SENDER, Receiver: AttachKind.RECEIVER, OneshotSender: AttachKind.ONESHOT_SENDER,
          OneshotReceiver: AttachKind.ONESHOT_RECEIVER}


def attach_kind(half: Half) -> AttachKind:
    """The engine attachment for handing `half` to the peer."""
    if half._done is not None:
        raise ChannelClosed(f"cannot send a half that is {half._done}")
    if isinstance(half, Sender) and half._group is not None and half._group.open > 1:
        raise ChannelClosed("a cloned sender cannot travel in a message while its clones are open")
    return _KINDS[type(half)]

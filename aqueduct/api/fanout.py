"""One producer, many subscribers: `aqueduct.Broadcast(T)` and `aqueduct.Watch(T, initial)`.

Theory of operation. Every subscriber is an ordinary channel: `subscribe()` makes a pair, keeps the
Sender and returns the `Receiver[T]`, which may stay local or travel inside a message like any other.
A pump task per subscriber moves values from a small per-subscriber queue onto its channel with a
normal `send`, so the channel's own backpressure (local queue or the peer's window) applies.

broadcast: `send(v)` offers v to every subscriber. With `on_lag="block"` it waits until every queue has
room (the slowest subscriber paces the producer; `timeout=` bounds that wait, and a send that timed out
offered v to nobody). With `on_lag="lagged"` it never waits: a full queue
drops its oldest value and counts it, and before the next value the subscriber gets `Lagged(n)` from
`recv` (an in-band notice: a LagNotice in a local pipe, a CBOR tag on a connection), then goes on.

watch: subscribers see the latest value. `send(v)` replaces the value; each pump sends whatever is
latest when its channel can take it, so intermediate values may be skipped. A new subscriber gets the
current value first. Its `send` never waits, but is awaited as a broadcast's is (one shape for both: a
producer can be handed either).

On a typed broadcast or watch, `send` checks the value first: one that is not a T raises ValidationError
there, in the producer, instead of later in a pump. `close()` (or `async with`) finishes every subscriber's
channel once its queue has drained. A subscriber whose receiver was closed or dropped is forgotten. The
pumps are the only writers of the subscriber channels; the broadcast's own state (queues, counters, latest
value) is written by its methods only.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections import deque
from typing import Any, Generic, Literal, TypeVar, overload

from ..errors import AqueductError, ChannelError
from .halves import LagNotice, Receiver, Sender, channel, within
from .halves.wiring import send_notice
from .oneof import OneOf, type_of
from .validation import spec_for

T = TypeVar("T")
OnLag = Literal["block", "lagged"]


class _Subscriber:
    __slots__ = ("lagged", "pump", "queue", "tx", "wake")

    def __init__(self, tx: Sender[Any]) -> None:
        self.tx = tx
        self.queue: deque[Any] = deque()
        self.lagged = 0
        self.wake = asyncio.Event()
        self.pump: asyncio.Task[None] | None = None


class _Fanout(Generic[T]):
    """What broadcast and watch share: subscribers, their pumps, closing."""

    def __init__(self, message_type: Any, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        tp: Any = type_of(message_type)  # (any type expression; spec_for caches by it)
        self.message_type = tp
        """The type of every value (None: any value)."""
        self._spec = spec_for(tp) if tp is not None else None
        self.capacity = capacity
        self._subs: list[_Subscriber] = []
        self._closed = False
        self._room = asyncio.Event()

    @property
    def subscribers(self) -> int:
        """Subscribers whose receivers are still open."""
        return len(self._subs)

    def subscribe(self) -> Receiver[T]:
        """A new subscriber's Receiver (local, or sent on in a message)."""
        if self._closed:
            raise AqueductError("subscribe on a closed broadcast")
        # capacity 1: what waits for a slow subscriber waits in its queue here, where lag is counted
        tx, rx = channel(self.message_type, capacity=1) if self.message_type is not None else channel(capacity=1)
        sub = _Subscriber(tx)
        self._first(sub)
        # (in a context of its own: made in a served call's, the pump kept that call's arguments as long as the
        # subscription lived, decision SVC-12)
        sub.pump = asyncio.get_running_loop().create_task(self._pump(sub), context=contextvars.Context())
        self._subs.append(sub)
        return rx

    def _check(self, value: Any) -> None:
        """ValidationError if `value` is not a T (a typed broadcast or watch)."""
        if self._spec is not None:
            self._spec.check(value, lambda: f"a {type(self).__name__.lower()}")

    def _first(self, sub: _Subscriber) -> None:
        """What a new subscriber starts with (nothing; watch: the current value)."""

    async def _pump(self, sub: _Subscriber) -> None:
        try:
            while True:
                while not sub.queue and not sub.lagged:
                    if self._closed:
                        await sub.tx.finish()
                        return
                    sub.wake.clear()
                    await sub.wake.wait()
                if sub.lagged:
                    n, sub.lagged = sub.lagged, 0
                    await send_notice(sub.tx, LagNotice(n))
                    continue
                value = sub.queue.popleft()
                self._room.set()
                await sub.tx.send(value)
        except ChannelError:  # the receiver was closed or dropped, or its connection went
            pass
        finally:
            with contextlib.suppress(ValueError):
                self._subs.remove(sub)
            self._room.set()

    async def close(self) -> None:
        """No more values: each subscriber's channel finishes once it has taken what is queued for it (a
        subscriber that never reads again keeps its channel open; closing its receiver ends it)."""
        self._closed = True
        for sub in self._subs:
            sub.wake.set()

    async def __aenter__(self) -> _Fanout[T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class Broadcast(_Fanout[T]):
    """One producer, many subscribers, each getting every value (or `Lagged(n)` when it fell behind).

    `Broadcast(T)` checks every value against T (`Broadcast()`: any value); `subscribe()` gives receivers,
    `await send(v)` reaches all of them."""

    @overload
    def __init__(
        self: Broadcast[Any], message_type: None = None, *, capacity: int = ..., on_lag: OnLag = ...
    ) -> None: ...
    @overload
    def __init__(self, message_type: type[T] | OneOf[T], *, capacity: int = ..., on_lag: OnLag = ...) -> None: ...
    def __init__(self, message_type: Any = None, *, capacity: int = 64, on_lag: OnLag = "lagged") -> None:
        super().__init__(message_type, capacity)
        self.on_lag: OnLag = on_lag

    async def send(self, value: T, *, timeout: float | None = None) -> None:
        """Offer `value` to every subscriber (waits for room only with on_lag="block": Timeout after `timeout`
        s, and then `value` was offered to nobody)."""
        if self._closed:
            raise AqueductError("send on a closed broadcast")
        self._check(value)
        if self.on_lag == "block" and any(len(s.queue) >= self.capacity for s in self._subs):
            await within(timeout, self._wait_for_room(), "send on a broadcast")
        for sub in self._subs:
            if len(sub.queue) >= self.capacity:
                sub.queue.popleft()
                sub.lagged += 1
            sub.queue.append(value)
            sub.wake.set()

    async def _wait_for_room(self) -> None:
        while any(len(s.queue) >= self.capacity for s in self._subs):
            self._room.clear()
            await self._room.wait()


class Watch(_Fanout[T]):
    """The latest value, for every subscriber: intermediate values may be skipped, the latest never is.

    `Watch(T, initial)` checks every value against T (`Watch(None, initial)`: any value); `subscribe()` gives
    receivers of the latest value, `await send(v)` replaces it."""

    @overload
    def __init__(self: Watch[Any], message_type: None, initial: Any) -> None: ...
    @overload
    def __init__(self, message_type: type[T] | OneOf[T], initial: T) -> None: ...
    def __init__(self, message_type: Any, initial: Any) -> None:
        super().__init__(message_type, 1)
        self.value: T = initial
        """The latest value."""

    def _first(self, sub: _Subscriber) -> None:
        sub.queue.append(self.value)

    async def send(self, value: T) -> None:
        """Make `value` the latest; each subscriber gets it as soon as its channel takes a message (never waits)."""
        if self._closed:
            raise AqueductError("send on a closed watch")
        self._check(value)
        self.value = value
        for sub in self._subs:
            sub.queue.clear()
            sub.queue.append(value)
            sub.wake.set()

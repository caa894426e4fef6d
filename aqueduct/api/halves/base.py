"""What every half is made of: the message and mode types, the in-process pipe two local halves share and the
`Link` protocol (a connection, as a networked half sees it); a half's binding (bindings.py) holds one or the other."""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from ...core.app import ConnectionClosed, Delivery
from ...errors import (
    ERROR_FOR_REASON,
    ChannelFinished,
    EndReason,
    Outcome,
    Timeout,
)
from ...wire.errors import CloseCode

T = TypeVar("T")
R = TypeVar("R")
OnInvalid = Literal["raise", "drop", "close"]
_SKIPPED: Any = object()
"""What `_typed_next` returns for an invalid message its receiver's policy drops."""

DEFAULT_LOCAL_CAPACITY = 1024
ModeLike = Delivery | str
Prefetched = tuple[Any, Delivery, int]
"""A message queued for a receiver: (value, delivery, number); in a local pipe, or taken from the engine ahead of
the application into a networked receiver's buffer."""


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


class Check(Protocol):
    """A typed receiver's check (its TypeSpec, validation.py), run on each decoded message as it is taken from the
    engine (prefetch.py): the value as a T, or ValidationError (the message is refused: decision API-34)."""

    def convert(self, value: Any, where: Callable[[], str]) -> Any: ...


class Link(Protocol):
    """What a networked half needs from its connection (implemented by api.connection)."""

    @property
    def closed(self) -> asyncio.Future[ConnectionClosed]: ...

    def send(
        self, handle: int, obj: Any, delivery: Delivery, *, confirm: bool = False
    ) -> Coroutine[Any, Any, Outcome | None] | asyncio.Future[Outcome] | None: ...
    def send_now(
        self, handle: int, obj: Any, delivery: Delivery, *, confirm: bool = False, force: bool = False
    ) -> asyncio.Future[Outcome] | None: ...
    def channel_name(self, handle: int) -> str: ...
    def finish(self, handle: int) -> None: ...
    def cancel(self, handle: int) -> None: ...
    async def fill(self, handle: int, buf: deque[Prefetched], check: Check | None = None,
                   where: Callable[[], str] | None = None) -> None: ...
    async def sender_ended(self, handle: int) -> EndReason: ...
    def close_receiver(self, handle: int) -> None: ...
    def drop_sender(self, handle: int) -> None: ...
    def drop_receiver(self, handle: int) -> None: ...


class _Pipe:
    """Shared state of an in-process channel."""

    __slots__ = ("_waiters", "capacity", "confirms", "count", "ended", "items", "receiver", "receiver_gone", "sender")

    def __init__(self, capacity: int) -> None:
        self.items: deque[Prefetched] = deque()
        self.capacity = capacity
        self.ended: EndReason | None = None
        self.receiver_gone = False
        self.count = 0
        self.sender: weakref.ref[Any] | None = None
        self.receiver: weakref.ref[Any] | None = None
        """Weak references to the Sender and the Receiver sharing this pipe (either may be collected)."""
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

    def push(self, value: Any, delivery: Delivery, confirm: bool) -> asyncio.Future[Outcome] | None:
        """Queue one message (the caller checked there is room); with `confirm`, the future of its outcome."""
        number = self.count
        self.items.append((value, delivery, number))
        self.count = number + 1
        fut: asyncio.Future[Outcome] | None = None
        if confirm:
            fut = self.confirms[number] = asyncio.get_running_loop().create_future()
        self.wake()
        return fut

    def taken(self, number: int) -> None:
        """The receiver took message `number`: a confirmed send learns it was delivered."""
        fut = self.confirms.pop(number, None)
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


def closed_here(link: Link) -> bool:
    """Whether this side closed `link`'s connection gracefully (`conn.close()`, a server's drain or exit: code 0
    or SHUTTING_DOWN, not the peer's close, an idle timeout or a protocol error)."""
    fut = link.closed
    if not fut.done() or fut.cancelled():
        return False
    ended = fut.result()
    return not ended.by_peer and ended.error_code in (0, CloseCode.SHUTTING_DOWN)


def _raise_end(reason: EndReason | None, what: str) -> None:
    if reason is None or reason is EndReason.FINISHED:
        raise ChannelFinished(f"{what}: finished")
    raise ERROR_FOR_REASON[reason](f"{what}: {reason.value}")


@dataclass(frozen=True, slots=True)
class LagNotice:
    """In-band notice that a broadcast subscriber missed `n` messages: its receiver raises Lagged(n) for it
    (locally it travels in the pipe; on a connection as a CBOR tag the codec decodes back into a LagNotice,
    honoured only by a receiver that may be a subscription: receiver.py)."""

    n: int

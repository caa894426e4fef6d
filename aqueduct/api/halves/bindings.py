"""A half's binding: where a Sender or Receiver talks, and what sending and receiving do there.

Every half holds exactly one binding, and a binding kind carries the behaviour of a half bound so; the
halves (sender.py, receiver.py) check the value and ask their binding, with no test of its type:

- `Unwired`: just made, not yet given a pipe or a channel (`channel()` and the wiring wire it at once);
  sending or receiving there raises ChannelClosed;
- `Local(pipe)`: an in-process channel: both halves of a local pair share one binding (bindings never change
  in place: a change is a new binding); a send queues into the pipe, a receive takes from it;
- `Networked(link, handle, pipe)`: a channel on a connection (`link`, the engine's `handle`): a send hands
  the link the value, a receive takes the batch the link prefetched into `buf` (a receiver whose sender moved
  away first drains what its old `pipe` still holds);
- `Closed(done, was, drops)`: ended here (finished, cancelled, closed): sending or receiving raises
  ChannelClosed; `was` is where it talked, still asked how the channel ended (`Sender.ended`) and told when
  the half is collected if `drops` (a networked half: its drop lets the engine forget the channel);
- `Moved`: the half went to the peer inside a message: unusable here.

The operations, by side. A sender's: `send(half, obj, wire, delivery, confirm)` (None once sent without
confirmation; otherwise an awaitable: the wait, then the send, and with `confirm` the message's Outcome),
`try_send` (the same at once, or WouldBlock), `end` (finish or cancel), `sent_one` (a oneshot's one message
went), `sender_ended` and `drop_sender`. A receiver's: `take(half)` (the next message, or None: `wait`
first), `wait(half)`, `close(half)` and `drop_receiver`. Every binding answers `done` (how it ended, None
while open), `drops`, `was`, `link` (not None only on a Networked one) and `where()`.

`move` is the one writer of a half's binding, and it checks `BINDING_MOVES` first: a move the table does
not connect is a library bug and raises IllegalTransition (core/transitions.py's rule, one floor up). The
halves' ends (`end`, `close`, `sent_one`) move here; every other move is the library's wiring (wiring.py).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, ClassVar

from ...core.app import Delivery
from ...core.transitions import IllegalTransition
from ...errors import (
    ChannelClosed,
    ChannelFinished,
    CodecError,
    EndReason,
    Lagged,
    Outcome,
    ReceiverDropped,
    ValidationError,
    WouldBlock,
)
from .base import LagNotice, Link, Prefetched, _Pipe, _raise_end

if TYPE_CHECKING:
    from ..validation import TypeSpec

Sent = Awaitable[Any] | None
"""What a binding's `send` gives: None once sent (without confirmation), else an awaitable to await (its
result: the Outcome of a confirmed send, None otherwise)."""


class _Half:
    """What both halves share: the binding (where they talk), the message type and what dropping one does."""

    __slots__ = ("__weakref__", "_binding", "_spec")
    _IS_SENDER: ClassVar[bool] = False

    def __init__(self) -> None:
        self._binding: Binding = UNWIRED
        self._spec: TypeSpec | None = None
        """The message type's spec (validation.py), or None: any value, nothing checked."""

    def __del__(self) -> None:
        if self._binding.drops:
            self._dropped()

    def _dropped(self) -> None:
        raise NotImplementedError

    def _discard(self) -> None:
        """End this half at once (it was inside a message being dropped): a sender cancels, a receiver closes."""
        raise NotImplementedError

    def _invalid(self, error: ValidationError) -> None:
        """A receiver took a message that is not a T: return to skip it, or raise (receiver.py)."""
        raise error

    def _lag_notice(self, notice: LagNotice) -> None:
        """A receiver took a broadcast's lag notice from the network: raise, or return to skip it (receiver.py)."""
        raise _not_subscribed()

    def _where(self) -> str:
        return self._binding.was.where()

    @property
    def networked(self) -> bool:
        """Whether this half talks (or talked, if ended here) to a channel on a connection."""
        return self._binding.was.link is not None

    @property
    def message_type(self) -> Any:
        """The type every message on this channel has (Any: untyped)."""
        return self._spec.tp if self._spec is not None else Any


def move(half: _Half, to: Binding) -> None:
    """The one place a half's binding changes: as BINDING_MOVES allows, else IllegalTransition."""
    frm = half._binding
    if type(to) not in BINDING_MOVES[type(frm)]:
        raise IllegalTransition(f"{type(half).__name__}: no move from {type(frm).__name__} to {type(to).__name__}")
    half._binding = to


def _closed(half: _Half, done: str) -> ChannelClosed:
    return ChannelClosed(f"{'sender' if half._IS_SENDER else 'receiver'} is {done}")


class _Ended:
    """What a binding a half cannot talk through does: every send and receive raises ChannelClosed."""

    __slots__ = ()
    done: str | None
    drops: bool
    link: ClassVar[None] = None

    def send(self, half: _Half, obj: Any, wire: Any, delivery: Delivery, confirm: bool) -> Sent:
        raise _closed(half, self.done or "not wired to a channel")

    def try_send(self, half: _Half, obj: Any, wire: Any, delivery: Delivery, confirm: bool) -> Any:
        raise _closed(half, self.done or "not wired to a channel")

    def take(self, half: _Half) -> Prefetched | None:
        raise _closed(half, self.done or "not wired to a channel")

    async def wait(self, half: _Half) -> None:
        raise _closed(half, self.done or "not wired to a channel")

    def sent_one(self, half: _Half) -> None:
        """(Already ended: nothing more to end.)"""

    async def sender_ended(self, half: _Half) -> EndReason:
        return EndReason.CLOSED

    def drop_sender(self, finish: bool) -> None:
        """(Nothing was told of this half.)"""

    def drop_receiver(self) -> None:
        """(Nothing was told of this half.)"""

    def where(self) -> str:
        return "a local channel"


class Unwired(_Ended):
    """A half just made: no pipe, no channel yet."""

    __slots__ = ()
    done = None
    drops = False

    @property
    def was(self) -> Unwired:
        return self

    def end(self, half: _Half, reason: EndReason) -> None:
        move(half, Closed(_DONE[reason], self, False))

    def close(self, half: _Half) -> None:
        move(half, Closed("closed", self, False))


class Moved(_Ended):
    """Sent to the peer inside a message: unusable here."""

    __slots__ = ()
    done = "moved into a message"
    drops = False

    @property
    def was(self) -> Unwired:
        return UNWIRED

    def end(self, half: _Half, reason: EndReason) -> None:
        raise _closed(half, self.done)

    def close(self, half: _Half) -> None:
        """(A moved receiver is no longer this side's to close.)"""


class Closed(_Ended):
    """Ended here: how (`done`), where it talked (`was`), whether collecting it still tells its channel."""

    __slots__ = ("done", "drops", "was")

    def __init__(self, done: str, was: Unwired | Local | Networked, drops: bool) -> None:
        self.done: str = done
        self.was = was
        self.drops = drops

    def __repr__(self) -> str:
        return f"Closed({self.done!r}, was={self.was!r}, drops={self.drops})"

    def end(self, half: _Half, reason: EndReason) -> None:
        raise _closed(half, self.done)

    def close(self, half: _Half) -> None:
        """(Closed already.)"""

    async def sender_ended(self, half: _Half) -> EndReason:
        return await self.was.sender_ended(half)

    def drop_sender(self, finish: bool) -> None:
        self.was.drop_sender(finish)

    def drop_receiver(self) -> None:
        self.was.drop_receiver()

    def where(self) -> str:
        return self.was.where()


class Local:
    """An in-process channel: the pipe both halves share."""

    __slots__ = ("pipe",)
    done: ClassVar[None] = None
    drops: ClassVar[bool] = True
    link: ClassVar[None] = None

    def __init__(self, pipe: _Pipe) -> None:
        self.pipe = pipe

    def __repr__(self) -> str:
        return f"Local({self.pipe!r})"

    @property
    def was(self) -> Local:
        return self

    def where(self) -> str:
        return "a local channel"

    # ---- a sender's ----
    def send(self, half: _Half, obj: Any, wire: Any, delivery: Delivery, confirm: bool) -> Sent:
        pipe = self.pipe
        if pipe.receiver_gone:
            raise ReceiverDropped("the receiver was closed or dropped")
        if len(pipe.items) < pipe.capacity:
            return pipe.push(obj, delivery, confirm)
        return self._send_later(half, obj, wire, delivery, confirm)

    async def _send_later(self, half: _Half, obj: Any, wire: Any, delivery: Delivery, confirm: bool) -> Any:
        """Wait for room, then send through whatever the half is bound to by then (its channel may have moved)."""
        binding: Binding = self
        while binding is self:
            await self.pipe.wait()
            binding = half._binding
            if binding is self and (self.pipe.receiver_gone or len(self.pipe.items) < self.pipe.capacity):
                break
        sent = binding.send(half, obj, wire, delivery, confirm)
        return None if sent is None else await sent

    def try_send(
        self, half: _Half, obj: Any, wire: Any, delivery: Delivery, confirm: bool
    ) -> asyncio.Future[Outcome] | None:
        pipe = self.pipe
        if pipe.receiver_gone:
            raise ReceiverDropped("the receiver was closed or dropped")
        if len(pipe.items) >= pipe.capacity:
            raise WouldBlock("local channel queue is full")
        return pipe.push(obj, delivery, confirm)

    def end(self, half: _Half, reason: EndReason) -> None:
        self.pipe.end(reason)
        move(half, Closed(_DONE[reason], self, False))  # (a local half ended by hand has nothing left to tell)

    def sent_one(self, half: _Half) -> None:
        self.end(half, EndReason.FINISHED)

    async def sender_ended(self, half: _Half) -> EndReason:
        pipe = self.pipe
        while not pipe.receiver_gone:
            await pipe.wait()
            was = half._binding.was
            if was is not self:  # (the channel moved onto a connection)
                return await was.sender_ended(half)
        return EndReason.RECEIVER_DROPPED

    def drop_sender(self, finish: bool) -> None:
        self.pipe.end(EndReason.FINISHED if finish else EndReason.CANCELLED)

    # ---- a receiver's ----
    def take(self, half: _Half) -> Prefetched | None:
        pipe = self.pipe
        if pipe.items:
            return _take_queued(pipe)
        if pipe.ended is not None:
            _raise_end(pipe.ended, "channel")
        return None

    async def wait(self, half: _Half) -> None:
        await self.pipe.wait()

    def close(self, half: _Half) -> None:
        self.pipe.receiver_dropped()
        move(half, Closed("closed", self, False))

    def drop_receiver(self) -> None:
        self.pipe.receiver_dropped()


class Networked:
    """A channel on a connection: the link and the engine handle; for a receiver, the buffer the link prefetches
    into (`buf`) and the pipe it drains first (`pipe`)."""

    __slots__ = ("buf", "handle", "link", "pipe")
    done: ClassVar[None] = None
    drops: ClassVar[bool] = True

    def __init__(self, link: Link, handle: int, pipe: _Pipe | None = None) -> None:
        self.link = link
        self.handle = handle
        self.pipe = pipe
        self.buf: deque[Prefetched] = deque()
        """Messages a receiver took from the engine ahead of the application (ConnectionLink.fill)."""

    def __repr__(self) -> str:
        return f"Networked(handle={self.handle}, pipe={self.pipe!r})"

    @property
    def was(self) -> Networked:
        return self

    def where(self) -> str:
        return self.link.channel_name(self.handle)

    # ---- a sender's ----
    def send(self, half: _Half, obj: Any, wire: Any, delivery: Delivery, confirm: bool) -> Sent:
        return self.link.send(self.handle, wire, delivery, confirm=confirm)  # (None, or what to await)

    def try_send(
        self, half: _Half, obj: Any, wire: Any, delivery: Delivery, confirm: bool
    ) -> asyncio.Future[Outcome] | None:
        return self.link.send_now(self.handle, wire, delivery, confirm=confirm)

    def end(self, half: _Half, reason: EndReason) -> None:
        (self.link.finish if reason is EndReason.FINISHED else self.link.cancel)(self.handle)
        move(half, Closed(_DONE[reason], self, True))  # (dropping it lets the engine forget the ended channel)

    def sent_one(self, half: _Half) -> None:
        move(half, Closed("finished", self, True))  # (on a connection the engine finishes it after its message)

    async def sender_ended(self, half: _Half) -> EndReason:
        return await self.link.sender_ended(self.handle)

    def drop_sender(self, finish: bool) -> None:
        if finish:  # (the last of a sender's clones: the channel finishes)
            self.link.finish(self.handle)
        self.link.drop_sender(self.handle)

    # ---- a receiver's ----
    def take(self, half: _Half) -> Prefetched | None:
        buf = self.buf
        while buf:
            got = buf.popleft()
            if type(got[0]) is not LagNotice:
                return got  # (a value the last fill took: decoded, and checked if the half is typed)
            half._lag_notice(got[0])
        pipe = self.pipe
        if pipe is not None and pipe.items:  # (what a moved sender had queued before its channel moved)
            return _take_queued(pipe)
        return None

    async def wait(self, half: _Half) -> None:
        spec = half._spec
        try:
            await self.link.fill(self.handle, self.buf, spec, half._where)
        except StopAsyncIteration:  # (the link's word for a finished channel)
            raise ChannelFinished(f"{self.where()}: finished") from None
        except CodecError as exc:  # refused (not acked unless the reader reads on: API-34); its halves ended
            if spec is None:
                raise
            half._invalid(spec.undecodable(exc, half._where))
        except ValidationError as exc:  # (not a T: the same)
            half._invalid(exc)

    def close(self, half: _Half) -> None:
        self.link.close_receiver(self.handle)  # (which discards what was prefetched too)
        if self.pipe is not None:
            self.pipe.receiver_dropped()
        move(half, Closed("closed", self, True))  # (dropping it lets the engine forget the closed channel)

    def drop_receiver(self) -> None:
        self.link.drop_receiver(self.handle)  # (what is left in a pipe it drains came from a moved sender)


def _take_queued(pipe: _Pipe) -> Prefetched:
    got = pipe.items.popleft()
    if pipe.confirms:
        pipe.taken(got[2])
    pipe.wake()
    if type(got[0]) is LagNotice:
        raise Lagged(got[0].n)
    return got


def _not_subscribed() -> CodecError:
    return CodecError("a broadcast lag notice on a receiver that is no broadcast subscription")


def discard_halves(value: Any) -> None:
    """End every half inside a value being dropped (senders cancel, receivers close): each container is visited
    once, without recursion (a codec other than ours may hand over a shared or a deep value)."""
    todo: list[Any] = [value]
    seen: set[int] = set()
    found: list[_Half] = []
    while todo:
        item = todo.pop()
        if isinstance(item, _Half):
            found.append(item)
        elif isinstance(item, dict | list | tuple | set | frozenset):
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, dict):
                todo.extend(item.keys())
                todo.extend(item.values())
            else:
                todo.extend(item)
    for half in found:
        half._discard()


Binding = Unwired | Local | Networked | Closed | Moved
UNWIRED, MOVED = Unwired(), Moved()
_DONE = {EndReason.FINISHED: "finished", EndReason.CANCELLED: "cancelled"}

BINDING_MOVES: dict[type[Binding], frozenset[type[Binding]]] = {
    Unwired: frozenset({Local, Networked, Closed, Moved}),  # (Closed, Moved: a half made by hand, never wired)
    Local: frozenset({Networked, Closed, Moved}),  # (to Networked: its partner moved; a receiver keeps the pipe)
    Networked: frozenset({Closed, Moved}),
    Closed: frozenset({Closed}),  # (a finished clone follows its channel, or the channel ends for every clone)
    Moved: frozenset(),
}
"""The moves a half's binding may make, by binding type."""

"""Receiver: the receiving half (recv, async for, close, the typed conversion of what arrives), and how the
halves inside a dropped message end at once.

What a peer sends reaches `recv` as a value, or as a refusal that never escapes as anything but a documented
error: a payload the codec refuses (malformed, value sharing, too deep, a bad attachment index) comes out of
the link's `fill` as CodecError; a typed receiver turns it into ValidationError, like a value that does not
fit its type, and applies `on_invalid` to both. A broadcast's lag notice (a LagNotice value) raises Lagged
only on a receiver that may be a broadcast subscription: a local one, or one that arrived in a message
(`accept_lags`, called by make.networked_half); anywhere else (an entrypoint, a channel whose sender we sent) it is an
invalid message, so a peer cannot make `recv` raise Lagged where no broadcast feeds it. A dropped message's
halves are ended by an iterative walk that visits each container once.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import AsyncIterator, Iterable
from typing import Any, Generic

from ...errors import (
    ChannelClosed,
    ChannelFinished,
    CodecError,
    ConnectionLost,
    Lagged,
    ValidationError,
)
from ..validation import TypeSpec
from .base import (
    _SKIPPED,
    LagNotice,
    Link,
    Message,
    OnInvalid,
    Prefetched,
    T,
    _raise_end,
    closed_here,
    within,
)
from .ports import MOVED, LocalPort, NetPort, Port, _Half, talks_through
from .sender import Sender


class Receiver(_Half, Generic[T]):
    """The receiving half of a channel: `recv`, `async for`, `close`."""

    __slots__ = ("_buf", "_lags", "on_invalid")

    def __init__(self) -> None:
        super().__init__()
        self._lags = False
        """Whether a lag notice from the network raises Lagged: this receiver arrived in a message, so it may be a
        broadcast subscription (make.networked_half); otherwise a notice is an invalid message."""
        self._buf: deque[Prefetched] = deque()
        """Messages a networked receiver took from the engine ahead of the application (ConnectionLink.fill)."""
        self.on_invalid: OnInvalid = "raise"
        """What a received message that does not fit the channel's type does: ValidationError from `recv`
        ("raise"), nothing ("drop": skipped), or ValidationError after closing this receiver ("close")."""

    # ---- wiring: the library's intention methods, each one move of the port table (ports.py) ----
    def join(self, port: LocalPort) -> None:
        """Wiring: receive through the pipe of a new local pair (make.py)."""
        self._move(port)
        port.pipe.receiver = weakref.ref(self)

    def bind(self, link: Link, handle: int) -> None:
        """Wiring: from now on (after what is already queued locally) this half reads network channel `handle`."""
        port = self._port
        pipe = port.pipe if type(port) is LocalPort else None
        self._move(NetPort(link, handle, pipe))
        if pipe is not None:
            pipe.wake()

    def accept_lags(self) -> None:
        """Wiring: this receiver arrived in a message, so it may be a broadcast subscription: a lag notice raises
        Lagged."""
        self._lags = True

    def mark_moved(self) -> None:
        """Wiring: this half went to the peer inside a message (moving.py)."""
        pipe = self._port.pipe
        self._move(MOVED)
        if pipe is not None:
            pipe.wake()

    def hand_on(self) -> Receiver[Any]:
        """Wiring: this half goes into a message while bound to a channel: a fresh Receiver takes over its source
        (what it prefetched first, then its pipe's leftovers and its channel) to relay it; this one is moved."""
        port = self._port
        buf, self._buf = self._buf, deque()
        self.mark_moved()
        fresh: Receiver[Any] = Receiver()
        fresh.take_over(port, buf)
        return fresh

    def take_over(self, port: Port, buf: deque[Prefetched]) -> None:
        """Wiring: read what a moved receiver read (`hand_on`): its prefetched messages and, if networked, its
        channel."""
        self._buf = buf
        if type(port) is NetPort:
            self._move(port)
            if port.pipe is not None:
                port.pipe.wake()

    def _dropped(self) -> None:
        port = talks_through(self._port)
        if type(port) is NetPort:  # (what is left in a pipe it still drains came from a sender that was moved)
            port.link.drop_receiver(port.handle)
        elif type(port) is LocalPort:
            port.pipe.receiver_dropped()

    async def recv_message(self, *, timeout: float | None = None) -> Message[T]:
        """The next message with its delivery mode; ChannelFinished after a finish, typed errors otherwise."""
        if timeout is not None:
            return await within(timeout, self.recv_message(), f"recv on {self._where()}")
        while True:
            port = self._port
            if port.done is not None:
                raise ChannelClosed(f"receiver is {port.done}")
            buf = self._buf
            if buf:
                value, delivery, number = buf[0]
                if self._spec is not None:
                    value = self._typed_next(self._spec)
                    if value is _SKIPPED:
                        continue
                else:
                    buf.popleft()
                    if type(value) is LagNotice:
                        self._lag_notice(value)
                return Message(value, delivery, number)
            pipe = port.pipe
            if pipe is not None and pipe.items:
                msg = pipe.items.popleft()
                if pipe.confirms:
                    pipe.taken(msg)
                pipe.wake()
                if type(msg.value) is LagNotice:
                    raise Lagged(msg.value.n)
                return msg
            link = port.link
            if link is not None:  # an open NetPort
                try:
                    await link.fill(port.handle, buf)  # type: ignore[union-attr]
                except StopAsyncIteration:  # (the link's word for a finished channel)
                    raise ChannelFinished(f"{self._where()}: finished") from None
                except CodecError as exc:  # the message was taken (acknowledged) and dropped; its halves ended
                    if self._spec is None:
                        raise
                    self._invalid(self._spec.undecodable(exc, self._where))
                continue
            assert pipe is not None
            if pipe.ended is not None:
                _raise_end(pipe.ended, "channel")
            await pipe.wait()

    async def recv(self, *, timeout: float | None = None) -> T:
        """The next message's value (ChannelFinished once the sender finished and all was taken; Timeout after
        `timeout` s; the ending's error otherwise: see `aqueduct.EndReason`)."""
        buf = self._buf
        if buf and timeout is None:  # (empty once closed or moved)
            spec = self._spec
            if spec is None:
                value = buf.popleft()[0]
                if type(value) is LagNotice:
                    self._lag_notice(value)
                return value  # type: ignore[no-any-return]
            value = self._typed_next(spec)
            if value is not _SKIPPED:
                return value  # type: ignore[no-any-return]
        return (await self.recv_message(timeout=timeout)).value

    def _typed_next(self, spec: TypeSpec) -> Any:
        """Take the next prefetched message converted to the channel's type; _SKIPPED if `on_invalid` drops it.

        An invalid message is taken too: it was acknowledged as processed when the engine gave it up."""
        value = self._buf.popleft()[0]
        if type(value) is LagNotice:
            if self._lags:
                raise Lagged(value.n)
            return self._invalid(spec.undecodable(_not_subscribed(), self._where))
        try:
            return spec.convert(value, self._where)
        except ValidationError as exc:
            _discard_halves(value)  # the halves it carried go with it, at once (not when collected)
            return self._invalid(exc)

    def _invalid(self, error: ValidationError) -> Any:
        """A message that is not a T was taken: _SKIPPED if `on_invalid` drops it, else raise `error` (after
        closing this receiver with "close")."""
        if self.on_invalid == "drop":
            return _SKIPPED
        if self.on_invalid == "close":
            self.close()
        raise error

    def _lag_notice(self, notice: LagNotice) -> None:
        """An untyped receiver took a lag notice: Lagged if it may be a subscription, CodecError otherwise."""
        if self._lags:
            raise Lagged(notice.n)
        raise _not_subscribed()

    def close(self) -> None:
        """Stop receiving: the sender sees ReceiverDropped; queued messages are discarded."""
        port = self._port
        if port.done is not None:
            return
        if type(port) is NetPort:
            port.link.close_receiver(port.handle)  # (which discards what was prefetched too)
        pipe = port.pipe
        if pipe is not None:
            pipe.receiver_dropped()
        # a networked receiver keeps its drop: dropping it lets the engine forget the closed channel
        self._close("closed")

    def __aiter__(self) -> AsyncIterator[T]:
        return self

    async def __anext__(self) -> T:
        buf = self._buf
        if buf:  # the common case on a busy channel: what the last fill took
            spec = self._spec
            if spec is None:
                value = buf.popleft()[0]
                if type(value) is LagNotice:
                    self._lag_notice(value)
                return value  # type: ignore[no-any-return]
            value = self._typed_next(spec)
            if value is not _SKIPPED:
                return value  # type: ignore[no-any-return]
        try:
            return (await self.recv_message()).value  # (not via recv: one coroutine less per message)
        except ChannelFinished:
            raise StopAsyncIteration from None
        except ConnectionLost:  # this side closed the connection (a drain, say): the loop ends as at a finish
            port = talks_through(self._port)
            if type(port) is NetPort and closed_here(port.link):
                raise StopAsyncIteration from None
            raise

    async def __aenter__(self) -> Receiver[T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "networked" if self.networked else "local"
        return f"<Receiver {where} {self._port.done or 'open'}>"


def _not_subscribed() -> CodecError:
    return CodecError("a broadcast lag notice on a receiver that is no broadcast subscription")


def end_halves(halves: Iterable[Any]) -> None:
    """End each of these halves (the ones a dropped message carried): senders cancel, receivers close."""
    for half in halves:
        if isinstance(half, Sender):
            if half.port.done is None:
                half.cancel()
        elif isinstance(half, Receiver):
            half.close()


def _discard_halves(value: Any) -> None:
    """End every half inside a received value that is being dropped: each container is visited once, without
    recursion (a codec other than ours may hand over a shared or a deep value)."""
    todo: list[Any] = [value]
    seen: set[int] = set()
    found: list[Any] = []
    while todo:
        item = todo.pop()
        if isinstance(item, Sender | Receiver):
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
    end_halves(found)

"""Receiver: the receiving half (recv, async for, close, the typed conversion of what arrives), and how the
halves inside a dropped message end at once."""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, Generic

from ...errors import (
    ChannelClosed,
    ChannelFinished,
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
    _Half,
    _Pipe,
    _raise_end,
    closed_here,
    within,
)
from .sender import Sender


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
        """The next message with its delivery mode; ChannelFinished after a finish, typed errors otherwise."""
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
                try:
                    await self._link.fill(self._handle, buf)
                except StopAsyncIteration:  # (the link's word for a finished channel)
                    raise ChannelFinished(f"{self._where()}: finished") from None
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
        try:
            return (await self.recv_message()).value  # (not via recv: one coroutine less per message)
        except ChannelFinished:
            raise StopAsyncIteration from None
        except ConnectionLost:  # this side closed the connection (a drain, say): the loop ends as at a finish
            if self._link is not None and closed_here(self._link):
                raise StopAsyncIteration from None
            raise

    async def __aenter__(self) -> Receiver[T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "networked" if self._link is not None else "local"
        return f"<Receiver {where} {self._done or 'open'}>"




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

"""Receiver: the receiving half (recv, async for, close) and its policy for messages that are not a T.

A Receiver asks its binding (bindings.py) for the next message (`take`) and, when there is none yet, waits
as the binding says (`wait`): one receive procedure for every binding; `async for` is `recv`, its end a
finish. What a peer sends reaches `recv` as a value, or as a refusal that never escapes as anything but a
documented error: a payload the codec refuses (malformed, value sharing, too deep, a bad attachment index)
comes out of the link's `fill` as CodecError; a typed receiver turns it into ValidationError, like a value
that does not fit its type, and applies `on_invalid` to both. A broadcast's lag notice (a LagNotice value)
raises Lagged only on a receiver that may be a broadcast subscription: a local one, or one that arrived in
a message (wiring.networked_half); anywhere else (an entrypoint, a channel whose sender we sent) it is an
invalid message, so a peer cannot make `recv` raise Lagged where no broadcast feeds it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Generic

from ...errors import ChannelFinished, ConnectionLost, Lagged, ValidationError
from .base import LagNotice, Message, OnInvalid, Prefetched, T, closed_here, within
from .bindings import _Half, _not_subscribed


class Receiver(_Half, Generic[T]):
    """The receiving half of a channel: `recv`, `async for`, `close`."""

    __slots__ = ("_lags", "on_invalid")

    def __init__(self) -> None:
        super().__init__()
        self._lags = False
        """Whether a lag notice from the network raises Lagged: this receiver arrived in a message, so it may be a
        broadcast subscription (wiring.networked_half); otherwise a notice is an invalid message."""
        self.on_invalid: OnInvalid = "raise"
        """What a received message that does not fit the channel's type does: ValidationError from `recv`
        ("raise"), nothing ("drop": skipped), or ValidationError after closing this receiver ("close"). Its
        sender's confirmed send (decision API-34): NACKED if this receiver closes on it ("close", the end of
        `async for`), ACKED if it reads on past it ("drop", or `recv` again after "raise")."""

    async def recv(self, *, timeout: float | None = None) -> T:
        """The next message's value (ChannelFinished once the sender finished and all was taken; Timeout after
        `timeout` s; the ending's error otherwise: see `aqueduct.EndReason`)."""
        got = self._binding.take(self) if timeout is None else None  # (on a busy channel: no wait)
        if got is None:
            got = await self._next(timeout)
        return got[0]  # type: ignore[no-any-return]

    async def recv_message(self, *, timeout: float | None = None) -> Message[T]:
        """The next message with its delivery mode; ChannelFinished after a finish, typed errors otherwise."""
        return Message(*await self._next(timeout))

    async def _next(self, timeout: float | None) -> Prefetched:
        if timeout is not None:
            return await within(timeout, self._next(None), f"recv on {self._where()}")
        while True:
            got = self._binding.take(self)
            if got is not None:
                return got
            await self._binding.wait(self)

    def close(self) -> None:
        """Stop receiving: the sender sees ReceiverDropped; queued messages are discarded."""
        self._binding.close(self)

    def _invalid(self, error: ValidationError) -> None:
        """A message that is not a T was taken: return if `on_invalid` drops it, else raise `error` (after
        closing this receiver with "close")."""
        if self.on_invalid == "drop":
            return
        if self.on_invalid == "close":
            self.close()
        raise error

    def _lag_notice(self, notice: LagNotice) -> None:
        """A lag notice from the network: Lagged if this receiver may be a subscription, else invalid."""
        if self._lags:
            raise Lagged(notice.n)
        if self._spec is None:
            raise _not_subscribed()
        self._invalid(self._spec.undecodable(_not_subscribed(), self._where))

    def _dropped(self) -> None:
        self._binding.drop_receiver()

    def _discard(self) -> None:
        self.close()

    def __aiter__(self) -> AsyncIterator[T]:
        """`async for`: each message's value (`recv`) until the channel finishes; the loop owns the receiver:
        whatever ends it (the finish, an error such as a message that is not a T, a `break`, an exception in its
        body, its task cancelled) closes the receiver, so no peer waits on a reader that is gone (to stop
        reading for a while and go on later, call `recv`)."""
        return self._loop()

    async def _loop(self) -> AsyncIterator[T]:
        ended = False  # (the channel's end: nothing left to close)
        try:
            while True:
                try:
                    value = await self.recv()
                except ChannelFinished:
                    ended = True
                    return
                except ConnectionLost:  # this side closed the connection (a drain, say): the loop ends as at a finish
                    link = self._binding.was.link
                    ended = link is not None and closed_here(link)
                    if ended:
                        return
                    raise
                yield value
        finally:
            if not ended:  # (a generator left unfinished is closed by its event loop: asyncio's asyncgen hooks)
                self.close()

    async def __aenter__(self) -> Receiver[T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "networked" if self.networked else "local"
        return f"<Receiver {where} {self._binding.done or 'open'}>"

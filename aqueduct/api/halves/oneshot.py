"""Oneshot halves: one message, then finished (the oneshot bit of the channel ID on the wire)."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Literal, overload

from ...errors import ChannelClosed, Outcome
from .base import ModeLike, T, within
from .receiver import Receiver
from .sender import Sender


class OneshotSender(Sender[T]):
    """The sending half of a oneshot channel: exactly one `send`, which also finishes the channel."""

    __slots__ = ()
    _ONESHOT: ClassVar[bool] = True

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
        done = self._binding.done
        if done is not None:
            raise ChannelClosed(f"sender is {done}")
        if confirm:
            fut = self.try_send(obj, mode, confirm=True)  # (a oneshot pipe or a fresh channel has room)
            return await within(timeout, fut, f"send on {self._where()}")
        await super().send(obj, mode, timeout=timeout)
        self._binding.sent_one(self)
        return None

    @overload
    def try_send(self, obj: T, mode: ModeLike | None = ..., *, confirm: Literal[False] = ...) -> None: ...
    @overload
    def try_send(self, obj: T, mode: ModeLike | None = ..., *, confirm: Literal[True]) -> asyncio.Future[Outcome]: ...
    def try_send(
        self, obj: T, mode: ModeLike | None = None, *, confirm: bool = False
    ) -> asyncio.Future[Outcome] | None:
        """Send the one message now, or WouldBlock."""
        fut = super().try_send(obj, mode, confirm=True) if confirm else super().try_send(obj, mode)
        self._binding.sent_one(self)
        return fut

    def __repr__(self) -> str:
        return "<Oneshot" + super().__repr__()[1:]


class OneshotReceiver(Receiver[T]):
    """The receiving half of a oneshot channel: `recv` gives the one message."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<Oneshot" + super().__repr__()[1:]




Half = Sender[Any] | Receiver[Any]

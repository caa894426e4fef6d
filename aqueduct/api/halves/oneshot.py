"""Oneshot halves: one message, then finished (the oneshot bit of the channel ID on the wire)."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Literal, overload

from ...errors import (
    EndReason,
    Outcome,
)
from ..validation import register_half_types
from .base import ModeLike, T, within
from .ports import NetPort, talks_through
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
        self._check()
        if confirm:
            fut = self._try_send_confirmed(obj, mode)  # (a oneshot pipe or a fresh channel has room)
            self._sent_one()
            return await within(timeout, fut, f"send on {self._where()}")
        await super().send(obj, mode, timeout=timeout)
        self._sent_one()
        return None

    def _sent_one(self) -> None:
        port = self._port
        if isinstance(talks_through(port), NetPort):  # (on a connection the engine finishes it after its message)
            self._close("finished", drops=port.drops)
        else:
            self._end(EndReason.FINISHED)

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

"""Sender: the sending half (send, try_send, finish, cancel, clone, ended) and the clone group.

A Sender checks a value against its message type, then asks its binding (bindings.py) to send it: one send
procedure for every binding and both confirmations. What only the library does with a Sender (binding it to a
channel, moving it) is in wiring.py.
"""

from __future__ import annotations

import asyncio
import weakref
from types import TracebackType
from typing import Any, ClassVar, Generic, Literal, overload

from ...core.app import Delivery
from ...errors import ChannelClosed, EndReason, Outcome
from .base import ModeLike, T, as_delivery, within
from .bindings import Closed, Networked, _Half, move


class Sender(_Half, Generic[T]):
    """The sending half of a channel: `send`, `try_send`, `finish`, `cancel`; `async with` finishes."""

    __slots__ = ("_group", "mode")
    _IS_SENDER: ClassVar[bool] = True
    _ONESHOT: ClassVar[bool] = False

    def __init__(self, *, mode: ModeLike = Delivery.ORDERED) -> None:
        super().__init__()
        self.mode = as_delivery(mode)
        """The delivery mode a `send` without one uses."""
        self._group: _Clones | None = None
        """The clones this sender shares its channel with (`clone`), or None."""

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

        It waits before it sends, never after: a send that times out (or is cancelled, as by
        `asyncio.timeout`) has sent nothing, and the channel goes on. On a typed channel a value that is
        not a T raises ValidationError and nothing is sent. With `confirm=True` it also waits for the
        message's fate and returns it (`Outcome.ACKED`, or how it was lost: nacked, cancelled, receiver
        dropped, connection lost, creating message lost); `timeout` then bounds that wait too, and a
        Timeout there leaves the message's fate unknown."""
        spec = self._spec
        sent = self._binding.send(self, obj, obj if spec is None else spec.check(obj, self._where),
                                  self.mode if mode is None else as_delivery(mode), confirm)
        if sent is None:
            return None
        if timeout is None:
            return await sent  # type: ignore[no-any-return]
        return await within(timeout, sent, f"send on {self._where()}")

    @overload
    def try_send(self, obj: T, mode: ModeLike | None = ..., *, confirm: Literal[False] = ...) -> None: ...
    @overload
    def try_send(self, obj: T, mode: ModeLike | None = ..., *, confirm: Literal[True]) -> asyncio.Future[Outcome]: ...
    def try_send(
        self, obj: T, mode: ModeLike | None = None, *, confirm: bool = False
    ) -> asyncio.Future[Outcome] | None:
        """Send `obj` now, or raise WouldBlock if the window (or local queue) is full.

        With `confirm=True` it returns a future of the message's Outcome."""
        spec = self._spec
        return self._binding.try_send(self, obj, obj if spec is None else spec.check(obj, self._where),
                                      self.mode if mode is None else as_delivery(mode), confirm)

    async def ended(self) -> EndReason:
        """Wait until this channel can take no more messages and say why (e.g. RECEIVER_DROPPED)."""
        return await self._binding.sender_ended(self)

    async def finish(self) -> None:
        """Gracefully end the channel: the receiver gets every message, then the end."""
        self._end(EndReason.FINISHED)

    def cancel(self) -> None:
        """Abruptly end the channel: the receiver sees ChannelCancelled."""
        self._end(EndReason.CANCELLED)

    def clone(self) -> Sender[T]:
        """Another Sender of this channel, for another producer; the channel finishes when the last clone
        finishes or is dropped (a cancel by any clone cancels it for all). A cloned sender stays here: it
        cannot travel in a message."""
        done = self._binding.done
        if done is not None:
            raise ChannelClosed(f"sender is {done}")
        if self._ONESHOT:
            raise ChannelClosed("a oneshot sender carries one message: it cannot be cloned")
        group = self._group
        if group is None:
            group = self._group = _Clones(self)
        twin: Sender[T] = type(self)(mode=self.mode)
        move(twin, self._binding)
        twin._spec, twin._group = self._spec, group
        group.add(twin)
        return twin

    def _end(self, reason: EndReason) -> None:
        binding = self._binding
        if binding.done is not None:
            binding.end(self, reason)  # (raises ChannelClosed)
        group = self._group
        if group is not None:
            if reason is EndReason.FINISHED and not group.release(self):
                move(self, Closed("finished", binding.was, False))  # the others go on; the last one finishes
                return
            for member in group.members():  # the channel ends for every clone
                if member is not self:
                    member._clone_ended()
        binding.end(self, reason)

    def _clone_ended(self) -> None:
        """Another clone cancelled the channel (or finished it last): it ended for this one too."""
        move(self, Closed("cancelled", self._binding.was, False))

    def _follow(self, net: Networked) -> None:
        """A clone follows its channel onto the network: an open one sends there, an ended one stays ended."""
        binding = self._binding
        move(self, net if binding.done is None else Closed(binding.done, net, binding.drops))

    def _dropped(self) -> None:
        binding = self._binding
        group = self._group
        if group is not None:
            if not group.release(self):
                return  # other clones still send on this channel
            binding.drop_sender(True)  # the last clone gone: the channel finishes
            return
        binding.drop_sender(False)  # a lone sender dropped: the channel is cancelled

    def _discard(self) -> None:
        if self._binding.done is None:
            self.cancel()

    async def __aenter__(self) -> Sender[T]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._binding.done is not None:
            return
        if exc_type is None:
            await self.finish()
        else:
            self.cancel()

    def __repr__(self) -> str:
        where = "networked" if self.networked else "local"
        return f"<Sender {where} {self._binding.done or 'open'}>"


class _Clones:
    """The senders sharing one channel (`Sender.clone`): how many are still open, and who they are."""

    __slots__ = ("_members", "open")

    def __init__(self, first: Sender[Any]) -> None:
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
        pipe = getattr(member._binding, "pipe", None)
        if self.open > 0 and pipe is not None and pipe.sender is not None and pipe.sender() is member:
            other = next((m for m in self._members if m is not member and m._binding.done is None), None)
            if other is not None:  # the pipe's own sender went: a moving receiver binds another clone
                pipe.sender = weakref.ref(other)
        return self.open <= 0

"""Sender: the sending half (send, try_send, confirmed sends, finish, cancel, clone) and the clone group."""

from __future__ import annotations

import asyncio
import weakref
from types import TracebackType
from typing import Any, ClassVar, Generic, Literal, overload

from ...core.app import Delivery
from ...errors import (
    ChannelClosed,
    EndReason,
    Outcome,
    ReceiverDropped,
    WouldBlock,
)
from .base import (
    LagNotice,
    Link,
    Message,
    ModeLike,
    T,
    _Half,
    _Pipe,
    as_delivery,
    within,
)


class Sender(_Half, Generic[T]):
    """The sending half of a channel: `send`, `try_send`, `finish`, `cancel`; `async with` finishes."""

    __slots__ = ("_group", "mode")
    _IS_SENDER: ClassVar[bool] = True
    _ONESHOT: ClassVar[bool] = False

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
        if self._ONESHOT:
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

        It waits before it sends, never after: a send that times out (or is cancelled, as by
        `asyncio.timeout`) has sent nothing, and the channel goes on. On a typed channel a value that is
        not a T raises ValidationError and nothing is sent. With `confirm=True` it also waits for the
        message's fate and returns it (`Outcome.ACKED`, or how it was lost: nacked, cancelled, receiver
        dropped, connection lost, creating message lost); `timeout` then bounds that wait too, and a
        Timeout there leaves the message's fate unknown."""
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

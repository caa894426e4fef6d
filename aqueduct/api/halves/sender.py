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
from ..validation import TypeSpec
from .base import (
    LagNotice,
    Link,
    Message,
    ModeLike,
    T,
    _Pipe,
    as_delivery,
    within,
)
from .ports import MOVED, Closed, LocalPort, NetPort, Port, _Half, talks_through


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

    # ---- wiring: the library's intention methods, each one move of the port table (ports.py) ----
    def join(self, port: LocalPort) -> None:
        """Wiring: send through the pipe of a new local pair (make.py)."""
        self._move(port)
        port.pipe.sender = weakref.ref(self)

    def bind(self, link: Link, handle: int) -> None:
        """Wiring: from now on this half (and every clone of it) sends on the network channel `handle` of `link`."""
        net = NetPort(link, handle)
        if self._group is None:
            self._move(net)
            return
        for member in self._group.members():
            member.follow(net)

    def follow(self, net: NetPort) -> None:
        """Wiring: a clone follows its channel onto the network: an open one sends there, an ended one stays ended."""
        port = self._port
        self._move(Closed(port.done, net, port.drops) if isinstance(port, Closed) else net)

    def join_clones(self, group: _Clones, port: Port, spec: TypeSpec | None) -> None:
        """Wiring: this new sender is a clone in `group`, sending through `port` (`clone`)."""
        self._move(port)
        self._spec, self._group = spec, group
        group.add(self)

    def clone_ended(self) -> None:
        """Wiring: another clone cancelled the channel (or finished it last): it ended for this one too."""
        self._close("cancelled", drops=False)

    def mark_moved(self) -> None:
        """Wiring: this half went to the peer inside a message (moving.py)."""
        self._move(MOVED)

    def hand_on(self) -> Sender[Any]:
        """Wiring: this networked half goes into a message: a fresh Sender takes over its channel (to relay it)."""
        port = self._port
        assert type(port) is NetPort
        self.mark_moved()
        fresh: Sender[Any] = Sender()
        fresh.bind(port.link, port.handle)
        return fresh

    def check_travel(self) -> None:
        """Wiring: raise ChannelClosed unless this half may be sent inside a message."""
        super().check_travel()
        if self._group is not None and self._group.open > 1:
            raise ChannelClosed("a cloned sender cannot travel in a message while its clones are open")

    def clone(self) -> Sender[T]:
        """Another Sender of this channel, for another producer; the channel finishes when the last clone
        finishes or is dropped (a cancel by any clone cancels it for all). A cloned sender stays here: it
        cannot travel in a message."""
        self._check()
        if self._ONESHOT:
            raise ChannelClosed("a oneshot sender carries one message: it cannot be cloned")
        group = self._group
        if group is None:
            group = self._group = _Clones(self)
        twin: Sender[T] = type(self)(mode=self.mode)
        twin.join_clones(group, self._port, self._spec)
        return twin

    def _dropped(self) -> None:
        port = talks_through(self._port)
        group = self._group
        if group is not None:
            if not group.release(self):
                return  # other clones still send on this channel
            if type(port) is NetPort:  # the last clone gone: the channel finishes (a lone sender cancels)
                port.link.finish(port.handle)
            elif type(port) is LocalPort:
                port.pipe.end(EndReason.FINISHED)
                return
        if type(port) is NetPort:
            port.link.drop_sender(port.handle)
        elif type(port) is LocalPort:
            port.pipe.sender_dropped()

    def _check(self) -> None:
        done = self._port.done
        if done is not None:
            raise ChannelClosed(f"sender is {done}")

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
            port = self._port
            link = port.link
            if link is not None:  # an open NetPort: one call; a wait only if one is due
                waiting = link.send(port.handle, wire, delivery)  # type: ignore[union-attr]
                if waiting is not None:
                    await waiting
                return None
            if port.done is not None:
                self._check()  # (raises)
            pipe = port.pipe
            assert pipe is not None
            if pipe.receiver_gone:
                raise ReceiverDropped("the receiver was closed or dropped")
            if len(pipe.items) < pipe.capacity:
                self._push(pipe, obj, delivery)
                return None
            await pipe.wait()

    async def send_notice(self, notice: LagNotice) -> None:
        """Wiring: send an in-band notice (not a T: no type check) in order with the messages (broadcast's Lagged)."""
        while True:
            port = self._port
            link = port.link
            if link is not None:
                waiting = link.send(port.handle, notice, Delivery.ORDERED)  # type: ignore[union-attr]
                if waiting is not None:
                    await waiting
                return
            if port.done is not None:
                self._check()  # (raises)
            pipe = port.pipe
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
                port = self._port
                if type(port) is NetPort:  # (the networked wait: send_confirmed waits, then sends)
                    delivery = self.mode if mode is None else as_delivery(mode)
                    wire: Any = obj if self._spec is None else self._spec.check(obj, self._where)
                    return await port.link.send_confirmed(port.handle, wire, delivery)
                assert type(port) is LocalPort
                await port.pipe.wait()

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
        port = self._port
        link = port.link
        if link is not None:
            link.send_nowait(port.handle, wire, delivery)  # type: ignore[union-attr]
            return None
        pipe = port.pipe
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
        port = self._port
        link = port.link
        if link is not None:
            return link.send_nowait_confirmed(port.handle, wire, delivery)  # type: ignore[union-attr]
        pipe = port.pipe
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
            port = talks_through(self._port)
            if type(port) is NetPort:
                return await port.link.sender_ended(port.handle)
            if type(port) is not LocalPort:
                return EndReason.CLOSED
            pipe = port.pipe
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
                self._close("finished", drops=False)  # the others go on; the last one finishes
                return
            for member in group.members():  # the channel ends for every clone
                if member is not self:
                    member.clone_ended()
        port = self._port
        if type(port) is NetPort:
            (port.link.finish if reason is EndReason.FINISHED else port.link.cancel)(port.handle)
        elif type(port) is LocalPort:
            port.pipe.end(reason)
        # a networked sender keeps its drop: dropping it lets the engine forget the ended channel
        self._close("finished" if reason is EndReason.FINISHED else "cancelled")

    async def __aenter__(self) -> Sender[T]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._port.done is not None:
            return
        if exc_type is None:
            await self.finish()
        else:
            self.cancel()

    def __repr__(self) -> str:
        where = "networked" if self.networked else "local"
        return f"<Sender {where} {self._port.done or 'open'}>"




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
        port = member.port
        pipe = port.pipe if type(port) is LocalPort else None
        if self.open > 0 and pipe is not None and pipe.sender is not None and pipe.sender() is member:
            other = next((m for m in self._members if m is not member and m.port.done is None), None)
            if other is not None:  # the pipe's own sender went: a moving receiver binds another clone
                pipe.sender = weakref.ref(other)
        return self.open <= 0

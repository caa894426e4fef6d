"""Dispatch: run the calls that arrive on a service's channel against its implementation.

Theory of operation. `serve_calls(rx, impl)` reads call messages (typed: each one a method's call struct,
or dropped as invalid) and runs each in a task of its own, at most `max_concurrent_calls` at once: it takes
the next call only when a slot is free, so callers beyond that wait on flow control (their messages stay in
the channel's window), not in memory here. The receiving moves from task to task: a call taken while more
are already here gets a new task, but the last one (at one call in flight, every one) runs in the task that
received it, which first hands the receiving on to a new task. So a call starts in the loop turn its packet
woke, and its answer leaves in that turn's packet with the acknowledgement of the call and its reply
channel's control frame (a new task would start a turn later, after the transmit: two packets each way). A call task runs the method inside the connection's
interceptors with `current_call()` set, under the time the caller left it (`meta.timeout`), and sends the
value, or the exception as a `Failure`, on the call's reply oneshot. A watcher on the reply sender cancels
the task as soon as the caller stops waiting (its reply receiver closed: timeout, cancellation, or its
connection gone), so nothing of an abandoned call runs on. The loop ends with the channel (the caller's
sender finished or dropped, or the connection lost); the calls still running finish on their own.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..api.halves import Receiver, Sender
from ..errors import ChannelError, ValidationError
from .context import CURRENT, CallInfo, intercepted, settings_of
from .interface import Failure, Interface, Method, Service
from .stub import RemoteError

log = logging.getLogger("aqueduct.services")

_RUNNING: set[asyncio.Task[None]] = set()
"""Dispatchers of capabilities (their loops own themselves until their channel ends)."""


def spawn(coro: Any) -> asyncio.Task[None]:
    """Run a dispatcher that nothing else holds (a capability's)."""
    task = asyncio.get_running_loop().create_task(coro)
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    return task


def dispatchers() -> int:
    """How many capability dispatchers run in this process (for leak checks)."""
    return len(_RUNNING)


async def serve_calls(rx: Receiver[Any], impl: Service, iface: Interface) -> None:
    """Serve every call arriving on `rx` with `impl` until the channel ends."""
    rx.on_invalid = "drop"  # (a call that does not fit is dropped with its reply channel; the rest go on)
    dispatcher = _Dispatcher(rx, impl, iface)
    dispatcher.receive_next()
    try:
        await dispatcher.ended
    finally:
        dispatcher.stop()


class _Dispatcher:
    """One service channel's dispatch: its call slots, the task receiving now, and the channel's end."""

    __slots__ = ("by_call", "ended", "iface", "impl", "loop", "receiving", "rx", "slots")

    def __init__(self, rx: Receiver[Any], impl: Service, iface: Interface) -> None:
        self.loop = asyncio.get_running_loop()
        self.rx, self.impl, self.iface, self.by_call = rx, impl, iface, iface.by_call
        self.slots = asyncio.Semaphore(settings_of(rx._link).max_concurrent_calls)
        self.ended: asyncio.Future[None] = self.loop.create_future()
        self.receiving: asyncio.Task[None] | None = None

    def receive_next(self) -> None:
        """Hand the receiving on to a new task."""
        self.receiving = self.loop.create_task(self._receive())

    def stop(self) -> None:
        """Stop taking calls (the calls running finish on their own)."""
        if self.receiving is not None:
            self.receiving.cancel()

    async def _receive(self) -> None:
        """Take calls, each into a task of its own while more are waiting; run the last one here, after handing
        the receiving on (so its answer leaves in this loop turn, with the acknowledgement of its call)."""
        rx, slots = self.rx, self.slots
        try:
            while True:
                await slots.acquire()
                try:
                    call = await rx.recv()
                except BaseException:  # (ChannelError: the channel ended; or cancelled by `stop`)
                    slots.release()
                    raise
                method = self.by_call.get(type(call))
                if method is None:  # (only an untyped local sender could put something else here)
                    slots.release()
                    continue
                if not _more_waiting(rx):
                    break
                task = self.loop.create_task(_run(self.impl, self.iface, method, call, rx._link))
                task.add_done_callback(lambda _t: slots.release())
                if call.reply.networked:
                    _cancel_when_abandoned(task, call.reply)
                del call, task  # (the call task alone holds them: a cancelled call lets its reply sender go at once)
        except ChannelError:  # (ChannelFinished too: the caller finished its channel)
            if not self.ended.done():
                self.ended.set_result(None)
            return
        except Exception as exc:  # (a fault here ends serve_calls with it)
            if not self.ended.done():
                self.ended.set_exception(exc)
            return
        self.receive_next()
        try:
            if call.reply.networked:
                here = asyncio.current_task()
                assert here is not None
                _cancel_when_abandoned(here, call.reply)
            await _run(self.impl, self.iface, method, call, rx._link)
        finally:
            slots.release()


def _more_waiting(rx: Receiver[Any]) -> bool:
    """Whether another message is already here (the next `recv` would not wait)."""
    pipe = rx._pipe
    return bool(rx._buf) or (pipe is not None and bool(pipe.items))


def _cancel_when_abandoned(task: asyncio.Task[None], reply: Sender[Any]) -> None:
    watcher = asyncio.get_running_loop().create_task(reply.ended())

    def abandoned(w: asyncio.Task[Any]) -> None:
        if not w.cancelled() and not task.done():
            task.cancel()

    watcher.add_done_callback(abandoned)
    task.add_done_callback(lambda _t: watcher.cancel())


async def _run(impl: Service, iface: Interface, method: Method, call: Any, link: Any) -> None:
    reply: Sender[Any] = call.reply
    meta = call.meta
    fields = {name: getattr(call, name) for name in method.params}
    timeout = meta.timeout if meta is not None else None
    loop_time = asyncio.get_running_loop().time()
    info = CallInfo(iface.name, method.name, fields, dict(meta.metadata) if meta is not None else {}, "server",
                    link, None if timeout is None else loop_time + timeout)
    del call  # (the reply sender is held here alone: a cancelled call lets it go)
    CURRENT.set(info)
    fn = getattr(impl, method.name)
    interceptors = settings_of(link).interceptors

    async def last() -> Any:
        return await fn(**info.args)

    try:
        if timeout is not None:
            async with asyncio.timeout(timeout):
                value = await (intercepted(interceptors, info, last) if interceptors else last())
        else:
            value = await (intercepted(interceptors, info, last) if interceptors else last())
        out = method.reply(value=value)
    except Exception as exc:
        out = method.reply(error=_failure(exc, method))
    try:
        try:
            await reply.send(out)
        except ValidationError as exc:  # the method's value does not fit its declared result
            await reply.send(method.reply(error=_failure(exc, method)))
    except ChannelError:
        pass  # the caller is gone: nobody to tell


def _failure(exc: BaseException, method: Method) -> Failure:
    if isinstance(exc, RemoteError):  # (a stub passed on: the original failure travels on)
        return Failure(exc.type_name, exc.remote_message, exc.method)
    if isinstance(exc, TimeoutError) and not str(exc):
        return Failure("Timeout", "the call's deadline passed", method.name)
    return Failure(type(exc).__qualname__, str(exc), method.name)

"""Dispatch: run the calls that arrive on a service's channel against its implementation.

Theory of operation. `serve_calls(rx, impl)` reads call messages (typed: each one a method's call struct,
or dropped as invalid) and runs them, at most `max_concurrent_calls` at once: it takes the next call only
when a slot is free, so callers beyond that wait on flow control (their messages stay in the channel's
window), not in memory here. A call runs (`_run`) inside the connection's interceptors with `current_call()`
set, under the time the caller left it (`meta.timeout`), and sends the value, or the exception as a
`Failure`, on the call's reply oneshot.

Where a call runs: the task that received it starts it at once, in a context of its own (as a task of its
own would), so that its answer leaves in the loop turn its packet woke, in one packet with the
acknowledgement of the call and its reply channel's control frame (a task started now would run a turn
later, after that transmit: two packets each way). Most calls end without waiting (a method that does not
wait, a reply the window takes), and the task takes the next; a call that waits keeps this task as its own
from then on (`_Resumed` goes on driving it, cancellation included) and the receiving moves to a new task.
Such a call has a watcher on its reply sender that cancels it as soon as the caller stops waiting (its
reply receiver closed: timeout, cancellation, or its connection gone), so nothing of an abandoned call runs
on. The receiving ends with the channel (the caller's sender finished or dropped, or the connection lost);
the calls still running finish on their own.

Nothing of an ended call stays held, whatever ended it: its arguments (the capabilities among them) are held
by its frames and by its context (`current_call()`), and a loop callback keeps the context it was scheduled
in; a timer cancelled early keeps it, in the loop's heap, until its time. So the call's deadline timer is
armed before the call is made current (an abandoned call with an hour left kept its arguments that hour); a
capability's dispatcher made during a call (`spawn`: a method's result) runs without that call in its
context (it kept the call's arguments as long as it served); and the connection's own callbacks (its
transmit, its timers) run in a context of its own (quic/aioquic_protocol.py `own_context`), not in that of
the call whose send scheduled them (they carried it on from timer to timer): decision SVC-12.

What a call may be (context.py's `refusal`): its time left, metadata and depth are checked as it is read,
before anything of it runs; a refused call is answered at once with an `InvalidCall` failure naming the limit
(`asyncio.timeout(NaN)` used to put a NaN into the loop's timer heap and stall every connection). A call read
after its connection closed is dropped, never started. Slots: an outer call (depth 0) takes one of
`max_concurrent_calls`, and the receiving waits for one (the peer's calls beyond it stay in the channel's
window); a nested call (depth > 0: made while the peer served a call, a callback or a hop of a forwarded
capability) never waits: it takes one of `max_nested_calls` or is refused with `CallLimitExceeded`, so a call
the outer calls wait on is never stuck behind them.

Failures (`_failure`): a declared exception, a failure passed on from a stub and the library's own refusals
travel with their text, cut to `max_error_text` characters and marked; any other exception travels as its
type name and a call id, and the text is logged here under that id (`send_error_text=True` sends it). A
reply that cannot be sent (over the frame size, not of the declared result type) is answered with a
`ReplyFailed` failure instead, so the caller sees RemoteError, never a cancelled channel.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import logging
import os
from collections.abc import Coroutine, Generator
from typing import Any

from ..api.connection import link_of
from ..api.halves import Receiver, Sender
from ..errors import ChannelError
from .context import (
    CURRENT,
    CallInfo,
    CallLimitExceeded,
    ServiceLimits,
    intercepted,
    metadata_bytes,
    refusal,
    settings_of,
)
from .interface import Failure, Interface, Method, Service
from .stub import RemoteError

log = logging.getLogger("aqueduct.services")

_RUNNING: set[asyncio.Task[None]] = set()
"""Dispatchers of capabilities (their loops own themselves until their channel ends)."""

_CALL_IDS = itertools.count(1)
_PROCESS = os.urandom(3).hex()


def spawn(coro: Any) -> asyncio.Task[None]:
    """Run a dispatcher that nothing else holds (a capability's), in the context it is made in but for the call
    being served there, if any: a capability made in a call (a method's result, a listener passed on) held that
    call's `current_call()`, arguments included, for as long as it was served."""
    context = contextvars.copy_context()
    context.run(CURRENT.set, None)
    task = asyncio.get_running_loop().create_task(coro, context=context)
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard, context=context)
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

    __slots__ = ("by_call", "ended", "iface", "impl", "loop", "nested", "receiving", "rx", "slots")

    def __init__(self, rx: Receiver[Any], impl: Service, iface: Interface) -> None:
        self.loop = asyncio.get_running_loop()
        self.rx, self.impl, self.iface, self.by_call = rx, impl, iface, iface.by_call
        self.slots: asyncio.Semaphore | None = None
        """The outer calls' slots (made at the first call: a capability's channel meets its connection late)."""
        self.nested = 0
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
        """Take calls and run each here, in its own context, until it ends or first waits; one that waits keeps
        this task (its task from now on) and hands the receiving on to a new one."""
        rx = self.rx
        try:
            while True:
                call = await rx.recv()
                method = self.by_call.get(type(call))
                if method is None:  # (only an untyped local sender could put something else here)
                    continue
                link = link_of(rx)
                settings = settings_of(link)
                meta = call.meta
                depth = meta.depth if meta is not None else 0
                why = refusal(settings.limits, meta.timeout, meta.metadata, depth) if meta is not None else None
                held = 0
                if why is not None:
                    running = _refuse(call.reply, method, "InvalidCall", why)
                elif depth > 0:
                    if self.nested >= settings.limits.max_nested_calls:
                        running = _refuse(call.reply, method, "CallLimitExceeded",
                                          f"{self.nested} nested calls running, at max_nested_calls "
                                          f"({settings.limits.max_nested_calls})")
                    else:
                        self.nested += 1
                        held = -1
                        running = _run(self.impl, self.iface, method, call, link)
                else:
                    slots = self.slots
                    if slots is None:
                        slots = self.slots = asyncio.Semaphore(settings.max_concurrent_calls)
                    await slots.acquire()  # (at once while a slot is free; else the rest wait in the window)
                    held = 1
                    running = _run(self.impl, self.iface, method, call, link)
                if link is not None and link.is_closed:
                    running.close()  # (its connection closed while it waited: nobody to answer, never started)
                    self._release(held)
                    del call, meta, running  # (nothing of it stays held while the next is awaited)
                    continue
                reply: Sender[Any] = call.reply
                context = contextvars.copy_context()
                del call, meta  # (`running` alone holds it: a cancelled call lets its reply sender go at once)
                try:
                    waiting = context.run(running.send, None)
                except StopIteration:  # the call ended without waiting (answered, or its caller gone)
                    pass
                except Exception:  # (a fault of the dispatch itself: this call ends with it, the others go on)
                    log.exception("service call %s.%s failed", self.iface.name, method.name)
                else:
                    break
                self._release(held)
                del reply, context, running  # (nothing of an ended call stays held while the next is awaited)
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
            if reply.networked:
                here = asyncio.current_task(self.loop)
                assert here is not None
                _cancel_when_abandoned(here, reply)
                del here  # (the task keeps its cancellation, whose traceback holds this frame: no cycle through it)
            del reply
            await _Resumed(running, context, waiting)
        finally:
            self._release(held)

    def _release(self, held: int) -> None:
        if held > 0:
            assert self.slots is not None
            self.slots.release()
        elif held < 0:
            self.nested -= 1
class _Resumed:
    """Awaitable: go on running, in this task and in `context`, a coroutine started elsewhere that is waiting on
    `waiting` (what it yielded), as its own task would (a cancellation of this task is thrown into it)."""

    __slots__ = ("context", "coro", "waiting")

    def __init__(self, coro: Coroutine[Any, Any, None], context: contextvars.Context, waiting: Any) -> None:
        self.coro, self.context, self.waiting = coro, context, waiting

    def __await__(self) -> Generator[Any, None, None]:
        coro, context, waiting = self.coro, self.context, self.waiting
        while True:
            try:
                yield waiting  # (the task waits on the future the coroutine yielded, or yields the turn)
            except BaseException as exc:  # (cancelled while it waited: the call is told)
                step: Any = coro.throw
                arg: Any = exc
            else:
                step, arg = coro.send, None
            try:
                waiting = context.run(step, arg)
            except StopIteration:
                return
            finally:  # (a raised `arg` would hold this frame through its traceback: a cycle that kept a cancelled
                arg = None  # call's arguments, capabilities included, alive until the cyclic collector ran)


def _cancel_when_abandoned(task: asyncio.Task[None], reply: Sender[Any]) -> None:
    watcher = asyncio.get_running_loop().create_task(reply.ended())

    def abandoned(w: asyncio.Task[Any]) -> None:
        if not w.cancelled() and not task.done():
            task.cancel()

    watcher.add_done_callback(abandoned)
    task.add_done_callback(lambda _t: watcher.cancel())


async def _refuse(reply: Sender[Any], method: Method, kind: str, why: str) -> None:
    """Answer a call that must not run with a failure saying why."""
    try:
        await reply.send(method.reply(error=Failure(kind, why, method.name)))
    except ChannelError:
        pass  # the caller is gone: nobody to tell


async def _run(impl: Service, iface: Interface, method: Method, call: Any, link: Any) -> None:
    reply: Sender[Any] = call.reply
    meta = call.meta
    fields = {name: getattr(call, name) for name in method.params}
    timeout = meta.timeout if meta is not None else None
    loop_time = asyncio.get_running_loop().time()
    info = CallInfo(iface.name, method.name, fields, dict(meta.metadata) if meta is not None else {}, "server",
                    link, None if timeout is None else loop_time + timeout, meta.depth if meta is not None else 0)
    del call, meta  # (the reply sender is held here alone: a cancelled call lets it go)
    fn = getattr(impl, method.name)
    settings = settings_of(link)
    interceptors = settings.interceptors
    held = metadata_bytes(info.metadata)
    settings.running += 1
    settings.metadata_bytes += held

    async def last() -> Any:
        return await fn(**info.args)

    try:
        try:
            if timeout is not None:
                async with asyncio.timeout(timeout):  # (armed before the call is current: see the module comment)
                    CURRENT.set(info)
                    value = await (intercepted(interceptors, info, last) if interceptors else last())
            else:
                CURRENT.set(info)
                value = await (intercepted(interceptors, info, last) if interceptors else last())
            out = method.reply(value=value)
        except Exception as exc:
            out = method.failed(_failure(exc, iface, method, settings.limits), exc)
        await _answer(reply, out, method, settings.limits)
    finally:
        settings.running -= 1
        settings.metadata_bytes -= held


async def _answer(reply: Sender[Any], out: Any, method: Method, limits: ServiceLimits) -> None:
    """Send the reply; one that cannot be sent (too large, not of the result type) as a `ReplyFailed` failure."""
    try:
        try:
            await reply.send(out)
        except ChannelError:
            raise
        except Exception as exc:  # (LimitExceeded past the frame size, ValidationError: the value does not fit)
            log.warning("service call %s: its reply could not be sent", method.name, exc_info=True)
            why = f"the reply could not be sent: {type(exc).__qualname__}: {_cut(str(exc), limits)}"
            await reply.send(method.reply(error=Failure("ReplyFailed", why, method.name)))
    except ChannelError:
        pass  # the caller is gone: nobody to tell


def _cut(text: str, limits: ServiceLimits) -> str:
    """`text`, cut to `max_error_text` characters and marked so when longer."""
    if len(text) <= limits.max_error_text:
        return text
    return f"{text[:limits.max_error_text]}... [cut: {limits.max_error_text} of {len(text)} characters]"


def _failure(exc: BaseException, iface: Interface, method: Method, limits: ServiceLimits) -> Failure:
    if isinstance(exc, RemoteError):  # (a stub passed on: the original failure travels on)
        return Failure(exc.type_name, _cut(exc.remote_message, limits), exc.method)
    if isinstance(exc, TimeoutError) and not str(exc):
        return Failure("Timeout", "the call's deadline passed", method.name)
    name = type(exc).__qualname__
    if isinstance(exc, CallLimitExceeded) or limits.send_error_text or iface.errors.get(name) is type(exc):
        return Failure(name, _cut(str(exc), limits), method.name)
    call_id = f"{_PROCESS}-{next(_CALL_IDS)}"
    log.error("service call %s (%s.%s) raised %s; its text is in the traceback", call_id, iface.name, method.name,
              name, exc_info=(type(exc), exc, exc.__traceback__))
    return Failure(name, f"call {call_id}: the server logged this exception's text under this call id "
                         "(it sends only declared exceptions' text)", method.name)

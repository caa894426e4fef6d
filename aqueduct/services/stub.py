"""Stubs: an instance of a generated subclass of the interface whose every method is a remote call.

Theory of operation. `make_stub(iface, sender)` wraps the Sender of a service's channel (typed with the
interface's call type) in an instance of `<Interface>Stub`, a subclass of the interface made once per
interface, so a stub is what mypy and `isinstance` say it is. A call is `aqueduct.request` on that sender:
the method's call struct carries the arguments and a fresh reply oneshot; the sender's type check refuses a
wrong argument (ValidationError, nothing sent); the reply is the method's value, or a `Failure` raised here
as the declared exception type or `RemoteError`. However the call ends (answer, `call_options` timeout,
`asyncio.timeout`, cancellation) the reply receiver is closed, which tells the server to cancel the method.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..api.halves import Sender
from ..api.request import request
from ..errors import AqueductError, Timeout
from .context import CURRENT, OPTIONS, CallInfo, CallLimitExceeded, Settings, intercepted, settings_of
from .interface import CallMeta, Failure, Interface, Method, Service, declared_error


class RemoteError(AqueductError):
    """A service method raised an exception the interface does not declare: its type name, message and method.

    Also raised for a call the server refused (an interceptor's exception) or could not answer."""

    def __init__(self, type_name: str, message: str, method: str) -> None:
        super().__init__(f"{method}: {type_name}: {message}")
        self.type_name, self.remote_message, self.method = type_name, message, method


def raised(iface: Interface, failure: Failure, fields: Any = None) -> BaseException:
    """The exception a caller sees for a Failure: the declared type (remade from its fields, or from its message)
    or RemoteError."""
    declared = iface.errors.get(failure.type)
    if declared is not None:
        try:
            return declared_error(declared).decode(failure.message, fields)
        except Exception:  # (no fields arrived, or its constructor refused them: say what happened anyway)
            pass
    return RemoteError(failure.type, failure.message, failure.method)


_STUBS: dict[type, type] = {}


def make_stub(iface: Interface, sender: Sender[Any]) -> Any:
    """A stub of `iface` calling through `sender` (a Sender of the interface's call type)."""
    cls = _STUBS.get(iface.cls)
    if cls is None:
        namespace: dict[str, Any] = {name: _remote(m) for name, m in iface.methods.items()}
        namespace["__repr__"] = lambda self: f"<{iface.name} stub over {self._aq_sender!r}>"
        namespace["_aq_iface"] = iface
        cls = _STUBS[iface.cls] = type(f"{iface.cls.__name__}Stub", (iface.cls,), namespace)
    stub: Any = object.__new__(cls)
    stub._aq_sender = sender
    return stub


def is_stub(obj: Any) -> bool:
    """Whether `obj` is a stub (a service reached through a channel) rather than an implementation."""
    return type(obj) in _STUBS.values()


def sender_of(stub: Service) -> Sender[Any]:
    """The Sender a stub calls through."""
    return stub._aq_sender  # type: ignore[attr-defined,no-any-return]


def _remote(method: Method) -> Any:
    async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        sender = self._aq_sender
        fields = method.fields(args, kwargs)
        settings = settings_of(sender.link)
        if settings.interceptors or OPTIONS.get() is not None or CURRENT.get() is not None:
            return await remote_call(self._aq_iface, sender, method, fields)
        return await _exchange(self._aq_iface, sender, method, fields, None, None, settings, 0)  # (most calls)

    call.__name__ = call.__qualname__ = method.name
    return call


async def remote_call(iface: Interface, sender: Sender[Any], method: Method, fields: dict[str, Any]) -> Any:
    """Call `method` with `fields` through `sender`: its value, or the exception it raised over there."""
    link = sender.link
    settings = settings_of(link)
    options = OPTIONS.get()
    timeout = options.timeout if options is not None else None
    metadata = dict(options.metadata) if options is not None else {}
    serving = CURRENT.get()
    depth = 0 if serving is None else serving.depth + 1
    if settings.interceptors:
        deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
        info = CallInfo(iface.name, method.name, fields, metadata, "client", link, deadline,  # type: ignore[arg-type]
                        depth)

        async def last() -> Any:
            return await _exchange(iface, sender, method, info.args, info.metadata, timeout, settings, depth)

        return await intercepted(settings.interceptors, info, last)
    return await _exchange(iface, sender, method, fields, metadata, timeout, settings, depth)


async def _exchange(iface: Interface, sender: Sender[Any], method: Method, fields: dict[str, Any],
                    metadata: dict[str, str] | None, timeout: float | None, settings: Settings, depth: int) -> Any:
    meta = CallMeta(timeout, metadata or {}, depth) if timeout is not None or metadata or depth else None
    build: Any = method.call  # (a msgspec Struct class made at run time, with a `reply` field)
    reply: Any
    try:
        if depth:  # a nested call: never waits for a slot its outer call may hold (context.py)
            limits = settings.limits
            if depth > limits.max_call_depth:
                raise CallLimitExceeded("max_call_depth", f"{iface.name}.{method.name}: the call would be nested "
                                        f"{depth} deep, over max_call_depth ({limits.max_call_depth})")
            if settings.nested >= limits.max_nested_calls:
                raise CallLimitExceeded("max_nested_calls", f"{iface.name}.{method.name}: {settings.nested} nested "
                                        f"calls in flight, at max_nested_calls ({limits.max_nested_calls})")
            settings.nested += 1
            try:
                reply = await request(sender, lambda r: build(reply=r, meta=meta, **fields), timeout=timeout)
            finally:
                settings.nested -= 1
        elif settings.calls is not None:
            await settings.calls.acquire()
            try:
                reply = await request(sender, lambda r: build(reply=r, meta=meta, **fields), timeout=timeout)
            finally:
                settings.calls.release()
        else:
            reply = await request(sender, lambda r: build(reply=r, meta=meta, **fields), timeout=timeout)
    except Timeout as exc:  # (request's own text names no method: say which call ran out of time)
        raise Timeout(f"{iface.name}.{method.name}: {str(exc).removeprefix('request: ')}") from None
    if reply.error is not None:
        raise raised(iface, reply.error, getattr(reply, "fields", None))
    return reply.value

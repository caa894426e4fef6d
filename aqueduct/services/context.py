"""What surrounds one call: its `CallInfo` (method, arguments, peer, metadata, deadline), the interceptors that
see it, the caller's `call_options`, and each connection's service settings.

Theory of operation. Interceptors wrap a call like gRPC's: `async def icpt(call, proceed)` sees the
`CallInfo`, may refuse (raise) or change `call.metadata` (a client's travel with the call), and returns what
`await proceed()` returned. A connection's settings (interceptors, `max_concurrent_calls`) are kept per
`ConnectionLink`, weakly, so that stubs and capability dispatchers which meet a connection later (a stub
that arrived in a message, a listener passed as an argument) find them from the half they talk through.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..api.auth import identity_of
from ..api.connection import QuicLink
from ..errors import ConfigError
from ..quic.mtls import PeerIdentity, handshake_identity

DEFAULT_MAX_CONCURRENT_CALLS = 64
"""Calls one service channel runs at once (per connection: `serve`/`connect(max_concurrent_calls=)`)."""


@dataclass(slots=True)
class CallInfo:
    """One call as interceptors and a running method see it (`aqueduct.current_call()` inside a method)."""

    service: str
    """The interface's name."""
    method: str
    args: dict[str, Any]
    metadata: dict[str, str]
    """Per-call metadata: set by the caller (`call_options(metadata=)`, or a client interceptor), read here."""
    side: Literal["client", "server"]
    """Where this CallInfo is seen: by the caller's interceptors, or by the side running the method."""
    link: QuicLink | None = field(default=None, repr=False)
    deadline: float | None = None
    """When the caller gives up (the event loop's clock), if it said (`call_options(timeout=)`)."""

    @property
    def peer_identity(self) -> PeerIdentity | None:
        """The peer's verified certificate (mutual TLS on a server; the server's on a client), or None."""
        return handshake_identity(self.link.protocol) if self.link is not None else None

    @property
    def identity(self) -> Any:
        """Server: what `serve(authenticate=...)` returned for this client (None without one)."""
        return identity_of(self.link) if self.link is not None else None


Proceed = Callable[[], Awaitable[Any]]
Interceptor = Callable[[CallInfo, Proceed], Awaitable[Any]]
"""`async def interceptor(call: CallInfo, proceed) -> result`: return `await proceed()`, or raise to refuse."""


@dataclass(slots=True)
class Settings:
    """A connection's service settings."""

    interceptors: tuple[Interceptor, ...] = ()
    max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS
    calls: asyncio.Semaphore | None = None
    """Bounds this side's calls in flight on the connection (a caller waits for a slot)."""


_DEFAULT = Settings()
_SETTINGS: weakref.WeakKeyDictionary[QuicLink, Settings] = weakref.WeakKeyDictionary()


def configure(link: QuicLink, interceptors: Sequence[Interceptor], max_concurrent_calls: int) -> Settings:
    """Give a connection its service settings."""
    if max_concurrent_calls < 1:
        raise ConfigError(f"max_concurrent_calls must be at least 1, not {max_concurrent_calls}")
    found = _SETTINGS[link] = Settings(tuple(interceptors), max_concurrent_calls,
                                       asyncio.Semaphore(max_concurrent_calls))
    return found


def settings_of(link: Any) -> Settings:
    """The service settings of the connection `link` (defaults for a local channel or an unconfigured one)."""
    return _SETTINGS.get(link, _DEFAULT) if link is not None else _DEFAULT


async def intercepted(interceptors: tuple[Interceptor, ...], info: CallInfo, last: Proceed) -> Any:
    """Run `last` inside the interceptors, outermost first."""
    proceed = last
    for icpt in reversed(interceptors):
        proceed = _bind(icpt, info, proceed)
    return await proceed()


def _bind(icpt: Interceptor, info: CallInfo, inner: Proceed) -> Proceed:
    return lambda: icpt(info, inner)


# ---- the caller's options and the running call ----
@dataclass(frozen=True, slots=True)
class CallOptions:
    timeout: float | None
    metadata: Mapping[str, str]


OPTIONS: contextvars.ContextVar[CallOptions | None] = contextvars.ContextVar("aqueduct_call_options", default=None)
CURRENT: contextvars.ContextVar[CallInfo | None] = contextvars.ContextVar("aqueduct_current_call", default=None)


@contextlib.contextmanager
def call_options(*, timeout: float | None = None, metadata: Mapping[str, str] | None = None) -> Iterator[None]:
    """Calls made inside carry `metadata` and give up after `timeout` seconds (`aqueduct.Timeout`); the time
    left travels with each call, and the server cancels the method when it runs out."""
    token = OPTIONS.set(CallOptions(timeout, dict(metadata or {})))
    try:
        yield
    finally:
        OPTIONS.reset(token)


def current_call() -> CallInfo:
    """The call the running service method serves (its method, arguments, peer, metadata and deadline)."""
    info = CURRENT.get()
    if info is None:
        raise LookupError("current_call(): not inside a service method")
    return info

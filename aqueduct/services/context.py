"""What surrounds one call: its `CallInfo` (method, arguments, peer, metadata, deadline), the interceptors that
see it, the caller's `call_options`, each connection's service settings and the bounds on what a peer's calls
may make us hold (`ServiceLimits`).

Theory of operation. Interceptors wrap a call like gRPC's: `async def icpt(call, proceed)` sees the
`CallInfo`, may refuse (raise) or change `call.metadata` (a client's travel with the call), and returns what
`await proceed()` returned. A connection's settings (interceptors, `max_concurrent_calls`) are kept per
`ConnectionLink`, weakly, so that stubs and capability dispatchers which meet a connection later (a stub
that arrived in a message, a listener passed as an argument) find them from the half they talk through.

Bounds (SECURITY.md, "Typed services"). Every number a peer's call carries is checked before use
(`refusal`): the time left must be a finite number of seconds in [0, `max_call_timeout`], the metadata within
`max_metadata_entries`, `max_metadata_value_bytes` and `max_metadata_bytes`, the nesting depth within
`max_call_depth`; a call that is not is answered at once with an `InvalidCall` failure naming the limit and
never runs. Nesting: a call made while serving a call (`CURRENT` is set, so its depth is one more) takes no
slot of `max_concurrent_calls`, which its outer call may be holding (that was a deadlock: 64 outer calls
whose callbacks called back); it takes one of `max_nested_calls` at once or fails at once with
`CallLimitExceeded`, so it never waits on a slot. `service_sizes(link)` counts what a connection's calls
hold; `configure` makes them part of the link's `state_sizes()` (and so of the `aqueduct_state_size` metric).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..api.auth import identity_of
from ..api.connection import QuicLink
from ..errors import AqueductError, ConfigError
from ..quic.mtls import PeerIdentity, handshake_identity

DEFAULT_MAX_CONCURRENT_CALLS = 64
"""Calls one service channel runs at once (per connection: `serve`/`connect(max_concurrent_calls=)`)."""


class CallLimitExceeded(AqueductError):
    """A call refused by a bound of `ServiceLimits` (`limit` names it): nested too deep, or too many nested calls
    in flight. Raised where the call is made; a call refused by the far side arrives as a `RemoteError` whose
    `type_name` is `CallLimitExceeded`."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit


@dataclass(frozen=True, slots=True)
class ServiceLimits:
    """What one connection's service calls may make this side hold, and what failures tell the caller
    (`serve(..., service=impl, service_limits=ServiceLimits(...))`, `connect(..., service_limits=...)`)."""

    max_call_timeout: float = 86_400.0
    """Longest time left (seconds) a call may carry (`call_options(timeout=)`); NaN, infinite, negative or
    longer is refused (`InvalidCall`)."""
    max_metadata_entries: int = 64
    """Metadata pairs one call may carry."""
    max_metadata_value_bytes: int = 4096
    """Bytes (UTF-8) of one metadata key or value."""
    max_metadata_bytes: int = 16_384
    """Bytes (UTF-8) of one call's metadata, keys and values together."""
    max_call_depth: int = 64
    """How deep calls may nest: a call made while serving a call is one deeper (a callback, a call through a
    forwarded capability: each hop of a chain is one)."""
    max_nested_calls: int = 64
    """Nested calls in flight per connection as a caller, and per service channel as a server; one more is
    refused at once (`CallLimitExceeded`), never left waiting."""
    max_error_text: int = 4096
    """Characters of an exception's text sent to a caller; longer text is cut and marked."""
    send_error_text: bool = False
    """Send the text of exceptions the interface does not declare (default: only their type name and a call id,
    the server logging the text under that id)."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.max_call_timeout) and self.max_call_timeout > 0):
            raise ConfigError(f"max_call_timeout must be a positive number of seconds, not {self.max_call_timeout}")
        for name in ("max_metadata_entries", "max_metadata_value_bytes", "max_metadata_bytes", "max_call_depth",
                     "max_nested_calls", "max_error_text"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must not be negative, not {getattr(self, name)}")


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
    depth: int = 0
    """How deep this call is nested: 0 for a call made outside any service method, else one more than the call
    being served where it was made."""

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
    """Bounds this side's outer calls in flight on the connection (a caller waits for a slot)."""
    limits: ServiceLimits = field(default_factory=ServiceLimits)
    nested: int = 0
    """This side's nested calls in flight on the connection (at most `limits.max_nested_calls`)."""
    running: int = 0
    """Calls of the peer running here (every service channel of the connection)."""
    metadata_bytes: int = 0
    """Bytes of metadata the running calls hold (each within `limits`)."""

    def sizes(self) -> dict[str, int]:
        """What the peer's calls hold on the connection (its tables in `ConnectionLink.state_sizes()`)."""
        return {"calls_running": self.running, "nested_calls": self.nested, "call_metadata_bytes": self.metadata_bytes}


_DEFAULT = Settings()
_SETTINGS: weakref.WeakKeyDictionary[QuicLink, Settings] = weakref.WeakKeyDictionary()


def configure(link: QuicLink, interceptors: Sequence[Interceptor], max_concurrent_calls: int,
              limits: ServiceLimits | None = None) -> Settings:
    """Give a connection its service settings."""
    if max_concurrent_calls < 1:
        raise ConfigError(f"max_concurrent_calls must be at least 1, not {max_concurrent_calls}")
    found = _SETTINGS[link] = Settings(tuple(interceptors), max_concurrent_calls,
                                       asyncio.Semaphore(max_concurrent_calls), limits or ServiceLimits())
    link.size_sources["services"] = found.sizes  # (the link's state_sizes() and aqueduct_state_size count them)
    return found


def settings_of(link: Any) -> Settings:
    """The service settings of the connection `link` (a process-wide one for local channels or an unconfigured
    connection)."""
    return _SETTINGS.get(link, _DEFAULT) if link is not None else _DEFAULT


def service_sizes(link: Any) -> dict[str, int]:
    """What the peer's calls hold on this connection (part of `link.state_sizes()`): calls running, this side's
    nested calls in flight, bytes of metadata held by running calls."""
    return settings_of(link).sizes()


def _utf8(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def metadata_bytes(metadata: Mapping[str, str]) -> int:
    """Bytes (UTF-8) of a call's metadata, keys and values."""
    return sum(_utf8(k) + _utf8(v) for k, v in metadata.items())


def refusal(limits: ServiceLimits, timeout: Any, metadata: Mapping[str, Any], depth: Any) -> str | None:
    """Why a call carrying these numbers from the peer must not run (None: it may), naming the limit."""
    if timeout is not None and not (isinstance(timeout, (int, float)) and 0 <= timeout <= limits.max_call_timeout):
        return (f"meta.timeout {timeout!r} is not a number of seconds in [0, max_call_timeout "
                f"({limits.max_call_timeout})]")
    if not (type(depth) is int and 0 <= depth <= limits.max_call_depth):
        return f"the call is nested {depth!r} deep, over max_call_depth ({limits.max_call_depth})"
    if len(metadata) > limits.max_metadata_entries:
        return f"{len(metadata)} metadata entries, over max_metadata_entries ({limits.max_metadata_entries})"
    total = 0
    for key, value in metadata.items():
        size = max(_utf8(key), _utf8(value))
        if size > limits.max_metadata_value_bytes:
            return (f"a metadata key or value of {size} bytes, over max_metadata_value_bytes "
                    f"({limits.max_metadata_value_bytes})")
        total += _utf8(key) + _utf8(value)
    if total > limits.max_metadata_bytes:
        return f"{total} bytes of metadata, over max_metadata_bytes ({limits.max_metadata_bytes})"
    return None


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
    left travels with each call, and the server cancels the method when it runs out. A timeout that is not a
    finite number of seconds, 0 or more, is a ValueError here."""
    if timeout is not None and not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout >= 0):
        raise ValueError(f"call_options: timeout must be a finite number of seconds, 0 or more, not {timeout!r}")
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

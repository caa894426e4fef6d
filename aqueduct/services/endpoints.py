"""`connect(..., service=Calculator)` and `serve(..., service=Calc())`: the API's connect and serve, plus services.

Theory of operation. A service rides on the connection's entrypoint: its channel is the entrypoint,
typed with the interface's call type (interface.py), so the schema agreed at connect is the service's
(methods, arguments, results) and `schema_check` works as for any entrypoint. The client gets a
`ServiceConnection` whose `service` is a stub over the entrypoint Sender; the server starts one dispatcher
per connection on its entrypoint Receiver (dispatch.py) and keeps the connections to itself (`async for`
over such a server yields nothing; `server.connections` lists them). Without `service=` both are exactly the
API's `connect` and `serve`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from ..api.connection import Connection, QuicLink, link_of
from ..api.endpoints import ConnectOptions, ServeOptions, Server, _Connecting
from ..api.endpoints import connect as api_connect
from ..api.endpoints import serve as api_serve
from ..api.halves import Receiver, Sender
from ..api.oneof import OneOf
from ..errors import ConfigError
from . import capability  # noqa: F401  (registers services with the typed channels)
from .context import DEFAULT_MAX_CONCURRENT_CALLS, Interceptor, ServiceLimits, configure
from .dispatch import serve_calls
from .interface import Service, interface_of
from .stub import make_stub

if TYPE_CHECKING:
    from typing_extensions import Unpack

T = TypeVar("T")
S = TypeVar("S", bound=Service)


class ServiceConnection(Connection[Sender[Any]], Generic[S]):
    """A connection made with `connect(..., service=Interface)`: `service` is the server's service."""

    __slots__ = ("_service",)

    def __init__(self, link: QuicLink, service: S) -> None:
        super().__init__(link)
        self._service = service

    @property
    def service(self) -> S:
        """The server's service: a stub whose every method is a call over this connection."""
        return self._service

    async def __aenter__(self) -> ServiceConnection[S]:
        return self


@overload
def connect(
    url: str, *, entrypoint: None = None, **options: Unpack[ConnectOptions]
) -> _Connecting[Connection[Sender[Any]]]: ...
@overload
def connect(
    url: str, *, entrypoint: type[T] | OneOf[T], **options: Unpack[ConnectOptions]
) -> _Connecting[Connection[Sender[T]]]: ...
@overload
def connect(
    url: str, *, service: Callable[..., S], interceptors: Sequence[Interceptor] = ...,
    max_concurrent_calls: int = ..., service_limits: ServiceLimits | None = ..., **options: Unpack[ConnectOptions],
) -> _Connecting[ServiceConnection[S]]: ...
def connect(
    url: str,
    *,
    entrypoint: Any = None,
    service: Any = None,
    interceptors: Sequence[Interceptor] = (),
    max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS,
    service_limits: ServiceLimits | None = None,
    **options: Any,
) -> Any:
    """Connect to an Aqueduct server (see `aqueduct.api.connect` for every option).

    `service=Interface`: `conn.service` is a stub of the server's service (`serve(..., service=impl)`); its
    calls run through `interceptors` (outermost first) and at most `max_concurrent_calls` are in flight
    (more callers wait for a slot; calls made inside a service method take none, see `ServiceLimits`), and
    `service_limits` bounds what the server's calls (callbacks) may make this side hold. The interface's schema
    is agreed as an entrypoint's is."""
    if service is None:
        if interceptors or service_limits is not None:
            raise ConfigError("interceptors= and service_limits= need service=")
        return api_connect(url, entrypoint=entrypoint, **options)
    if entrypoint is not None:
        raise ConfigError("connect: give service= or entrypoint=, not both (a service rides on the entrypoint)")
    iface = interface_of(service)
    configure_args = (tuple(interceptors), max_concurrent_calls, service_limits)

    async def opened() -> ServiceConnection[Any]:
        conn = await api_connect(url, entrypoint=iface.call_type, **options)
        link = link_of(conn)
        configure(link, *configure_args)
        return ServiceConnection(link, make_stub(iface, conn.entrypoint))

    return _Connecting(opened())


@overload
def serve(
    host: str, port: int, *, cert: str | Path, key: str | Path, entrypoint: None = None,
    **options: Unpack[ServeOptions],
) -> contextlib.AbstractAsyncContextManager[Server[Receiver[Any]]]: ...
@overload
def serve(
    host: str, port: int, *, cert: str | Path, key: str | Path, entrypoint: type[T] | OneOf[T],
    **options: Unpack[ServeOptions],
) -> contextlib.AbstractAsyncContextManager[Server[Receiver[T]]]: ...
@overload
def serve(
    host: str, port: int, *, cert: str | Path, key: str | Path, service: Service,
    interceptors: Sequence[Interceptor] = ..., max_concurrent_calls: int = ...,
    service_limits: ServiceLimits | None = ..., **options: Unpack[ServeOptions],
) -> contextlib.AbstractAsyncContextManager[Server[Receiver[Any]]]: ...
def serve(
    host: str, port: int, *, cert: str | Path, key: str | Path, entrypoint: Any = None, service: Any = None,
    interceptors: Sequence[Interceptor] = (), max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS,
    service_limits: ServiceLimits | None = None, **options: Any,
) -> contextlib.AbstractAsyncContextManager[Server[Any]]:
    """Listen for Aqueduct connections (see `aqueduct.api.serve` for every option).

    `service=impl`: every connection's calls run on `impl` (at most `max_concurrent_calls` at once per
    connection; the callers beyond wait), through `interceptors` (outermost first), within `service_limits`
    (deadlines, metadata, nesting, what failures tell the caller: `ServiceLimits`, SECURITY.md)."""
    if service is None:
        if interceptors or service_limits is not None:
            raise ConfigError("interceptors= and service_limits= need service=")
        return api_serve(host, port, cert=cert, key=key, entrypoint=entrypoint, **options)
    if entrypoint is not None:
        raise ConfigError("serve: give service= or entrypoint=, not both (a service rides on the entrypoint)")
    if not isinstance(service, Service):
        raise ConfigError(f"serve(service=...) takes a service implementation, not {service!r}")
    return _serve_service(host, port, cert, key, service, tuple(interceptors), max_concurrent_calls,
                          service_limits or ServiceLimits(), options)


@contextlib.asynccontextmanager
async def _serve_service(host: str, port: int, cert: str | Path, key: str | Path, impl: Service,
                         interceptors: tuple[Interceptor, ...], max_calls: int, limits: ServiceLimits,
                         options: dict[str, Any]) -> AsyncIterator[Server[Any]]:
    iface = interface_of(type(impl))
    if max_calls < 1:
        raise ConfigError(f"max_concurrent_calls must be at least 1, not {max_calls}")
    async with api_serve(host, port, cert=cert, key=key, entrypoint=iface.call_type, **options) as server:
        tasks: set[asyncio.Task[None]] = set()

        async def accept() -> None:
            async for conn in server:
                configure(link_of(conn), interceptors, max_calls, limits)
                task = asyncio.get_running_loop().create_task(serve_calls(conn.entrypoint, impl, iface))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

        acceptor = asyncio.get_running_loop().create_task(accept())
        try:
            yield server
        finally:
            acceptor.cancel()
            for task in list(tasks):
                task.cancel()

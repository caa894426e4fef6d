"""`connect` and `serve`: open Aqueduct connections over QUIC and hand out `Connection`s.

`connect("aqueduct://host:port", ...)` is awaitable and an async context
manager. Without a usable session ticket it returns once the TLS handshake
is done and the server's headers arrived (so a codec mismatch fails right
there). With a ticket allowing 0-RTT (and `early_data=True`) it returns at
once, so the first messages travel in the client's first flight; a codec
mismatch then ends the connection as soon as the server's headers arrive.

`serve(host, port, ...)` is an async context manager yielding a `Server`;
`async for conn in server` yields each connection once its client's
headers arrived and its codec matched.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Generator, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypedDict, TypeVar, overload
from urllib.parse import urlsplit

from ..core.config import EngineConfig
from ..errors import ConfigError, ConnectError, ConnectionLost
from ..quic.endpoint import open_client, open_server
from ..quic.mtls import ClientAuth
from ..quic.protocol import AqueductProtocol
from ..quic.settings import TransportSettings
from ..quic.tickets import ClientTicketStore, ServerTicketStore
from ..quic.webtransport import WebTransportOptions, WebTransportSessions
from ..wire.errors import CloseCode
from .auth import Admission, Authenticate, refusal
from .codec import CODEC_HEADER, DEFAULT_CODEC, Codec
from .connection import Connection, QuicLink, link_of
from .halves import Receiver, Sender
from .link import ConnectionLink
from .oneof import OneOf, type_of
from .schema import SCHEMA_HEADER, SchemaCheck, canonical

if TYPE_CHECKING:
    from typing_extensions import Unpack

T = TypeVar("T")
C = TypeVar("C")
K = TypeVar("K", bound="_Closable")

HeaderItems = Iterable[tuple[str, bytes | str]]
DEFAULT_PORT = 4433
DEFAULT_CONNECT_TIMEOUT = 5.0
"""Seconds `connect` waits for the handshake and the server's headers before `ConnectError`."""
CLOSE_WAIT = 1.0
"""Seconds a server's close (drain, leaving `serve`) waits for each connection's peer to see it."""


def api_engine_config(config: EngineConfig | None) -> EngineConfig:
    """The engine configuration of an API connection: a reliable message is acked when the application takes it,
    so a message a receiver refuses (not a T, or undecodable) is nacked, never acked (decision API-34)."""
    return replace(config or EngineConfig(), ack_on_take=True)


def _headers(
    headers: HeaderItems | Mapping[str, bytes | str] | None, codec: Codec, schema: bytes | None = None
) -> list[tuple[str, bytes]]:
    items = headers.items() if isinstance(headers, Mapping) else (headers or ())
    out = [(k, v.encode() if isinstance(v, str) else bytes(v)) for k, v in items]
    out.append((CODEC_HEADER, codec.name.encode()))
    if schema is not None:
        out.append((SCHEMA_HEADER, schema))
    return out


def parse_url(url: str) -> tuple[str, int]:
    """Host and port of an `aqueduct://host:port` URL (port defaults to 4433)."""
    parts = urlsplit(url if "://" in url else f"aqueduct://{url}")
    try:
        port = parts.port  # (a port that is not a number, or out of range, raises here)
    except ValueError as exc:
        raise ConfigError(f"not an aqueduct://host:port URL: {url!r} ({exc})") from None
    if parts.scheme != "aqueduct" or not parts.hostname:
        raise ConfigError(f"not an aqueduct://host:port URL: {url!r}")
    return parts.hostname, port or DEFAULT_PORT


def check_port(port: int, what: str = "port") -> int:
    """`port` if it is a port number (0 to 65535; 0 picks a free one); ConfigError naming the value otherwise
    (the socket layer would take it modulo 65536: 99999 would listen on 34463)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"{what} {port!r} is not a port number: 0 to 65535 (0 picks a free one)")
    return port


class _Closable(Protocol):
    async def close(self) -> None: ...


class _Connecting(Generic[K]):
    """Awaitable and async context manager returned by `connect` (K: the connection it gives; the services'
    `connect` gives a ServiceConnection through the same class)."""

    def __init__(self, coro: Any) -> None:
        self._coro = coro
        self._conn: K | None = None

    def __await__(self) -> Generator[Any, None, K]:
        return self._coro.__await__()  # type: ignore[no-any-return]

    async def __aenter__(self) -> K:
        self._conn = await self._coro
        return self._conn

    async def __aexit__(self, *exc: object) -> None:
        if self._conn is not None:
            await self._conn.close()


class ConnectOptions(TypedDict, total=False):
    """The keywords of `connect` besides `entrypoint` (see `connect`)."""

    ca: str | Path | None
    fingerprint: str | None
    cert: str | Path | None
    key: str | Path | None
    headers: HeaderItems | Mapping[str, bytes | str] | None
    codec: Codec | None
    session_ticket_store: ClientTicketStore | None
    early_data: bool
    server_name: str | None
    settings: TransportSettings | None
    engine_config: EngineConfig | None
    record: Any
    connect_timeout: float
    schema_check: SchemaCheck


@overload
def connect(
    url: str, *, entrypoint: None = None, **options: Unpack[ConnectOptions]
) -> _Connecting[Connection[Sender[Any]]]: ...
@overload
def connect(
    url: str, *, entrypoint: type[T] | OneOf[T], **options: Unpack[ConnectOptions]
) -> _Connecting[Connection[Sender[T]]]: ...
def connect(
    url: str,
    *,
    entrypoint: Any = None,
    ca: str | Path | None = None,
    fingerprint: str | None = None,
    cert: str | Path | None = None,
    key: str | Path | None = None,
    headers: HeaderItems | Mapping[str, bytes | str] | None = None,
    codec: Codec | None = None,
    session_ticket_store: ClientTicketStore | None = None,
    early_data: bool = True,
    server_name: str | None = None,
    settings: TransportSettings | None = None,
    engine_config: EngineConfig | None = None,
    record: Any = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    schema_check: SchemaCheck = "exact",
) -> _Connecting[Any]:
    """Connect to an Aqueduct server; verify it against `ca` (PEM file), a pinned `fingerprint`, or system CAs.

    `record`: a directory (or `aqueduct.recording.Recorder`) to record this connection's traffic into.
    `cert`, `key`: a client certificate chain and key (PEM) for servers that verify clients (mutual TLS);
    `headers`: sent to the server (e.g. `{"authorization": token}` for its `authenticate` callback).
    A server that refuses this client fails the connect with `AuthenticationFailed` (after it returned, with
    0-RTT: the connection then ends with that close code).
    Fails with `ConfigError` for an unusable CA, certificate or key file (before anything is sent), and with
    `ConnectError` for everything that happens before the connection is usable: nothing listens (at once, on
    ICMP port unreachable), the handshake and the server's headers do not complete within `connect_timeout`
    seconds, TLS verification fails, the server refuses this client (`AuthenticationFailed`), speaks another
    protocol version, or uses another codec (`CodecMismatch`) or entrypoint schema (`SchemaMismatch`).
    `entrypoint=T` (or `OneOf(A, B)` for a union): `conn.entrypoint` is a `Sender[T]`, checked as every typed
    Sender is; T's schema is
    announced, and a server announcing a different one fails the connect with `SchemaMismatch`
    (`schema_check="compatible"` accepts one that differs only by optional fields).
    """
    return _Connecting(
        _connect(url, ca, fingerprint, headers, codec or DEFAULT_CODEC, session_ticket_store, early_data,
                 server_name, settings, engine_config, record, connect_timeout, type_of(entrypoint), schema_check,
                 cert, key)
    )


async def _connect(
    url: str,
    ca: str | Path | None,
    fingerprint: str | None,
    headers: HeaderItems | Mapping[str, bytes | str] | None,
    codec: Codec,
    tickets: ClientTicketStore | None,
    early_data: bool,
    server_name: str | None,
    settings: TransportSettings | None,
    engine_config: EngineConfig | None,
    record: Any = None,
    connect_timeout: float = 0.0,
    entrypoint: Any = None,
    schema_check: SchemaCheck = "exact",
    cert: str | Path | None = None,
    key: str | Path | None = None,
) -> Connection[Any]:
    settings = settings or TransportSettings()
    engine_config = api_engine_config(engine_config)
    schema = canonical(entrypoint) if entrypoint is not None else None
    host, port = parse_url(url)
    protocol = await open_client(
        host, port, headers=_headers(headers, codec, schema), settings=settings, engine_config=engine_config, ca=ca,
        fingerprint=fingerprint, server_name=server_name, tickets=tickets, cert=cert, key=key,
    )
    link = ConnectionLink(protocol, codec, entrypoint, schema, schema_check)
    conn: Connection[Any] = Connection(link)
    if record is not None:
        from ..recording.hook import record_connection

        record_connection(link, record)
    if early_data and protocol.early_data_attempted:
        return conn
    try:
        async with asyncio.timeout(connect_timeout):
            await asyncio.shield(protocol.handshake)
            await asyncio.shield(link.ready)
    except TimeoutError:
        protocol.close_connection(0, "connect timeout")
        raise ConnectError(f"no answer from {host}:{port} within {connect_timeout} s") from None
    except (ConnectError, ConnectionLost) as exc:  # (the handshake's ConnectError, or the connection ended)
        by_peer = not protocol.quic.closed_locally  # (our own TLS stack refusing the server is no refusal of us)
        protocol.close_connection(0, "connect failed")
        refused = refusal(exc.code, str(exc), by_peer=by_peer) if exc.code is not None else None
        if refused is not None or isinstance(exc, ConnectError):
            raise (refused or exc) from None
        raise ConnectError(str(exc), exc.code) from None  # (ended before it was usable: no channel existed)
    except BaseException:
        protocol.close_connection(0, "connect failed")
        raise
    return conn


class Server(Generic[C]):
    """A listening Aqueduct server: `async for conn in server` (or `await server.accept()`).

    Its connections are `Connection[Receiver[T]]` when served with `entrypoint=T`."""

    def __init__(self, codec: Codec, entrypoint_type: Any = None, schema_check: SchemaCheck = "exact",
                 authenticate: Authenticate | None = None) -> None:
        self._codec = codec
        self._authenticate = authenticate
        self._entrypoint_type = entrypoint_type
        self._schema = canonical(entrypoint_type) if entrypoint_type is not None else None
        """The entrypoint type's canonical schema, announced in the `schema` header (api/schema.py)."""
        self._schema_check: SchemaCheck = schema_check
        self.address: tuple[str, int] = ("", 0)
        self.connections: set[Connection[C]] = set()
        self._queue: asyncio.Queue[Connection[C] | None] = asyncio.Queue()
        self._closed = False
        self._recorder: Any = None
        """The `aqueduct.recording.Recorder` every connection is recorded into (`serve(record=...)`), or None."""
        self.admission: Any = None
        """The QUIC listener with its admission counters (`refused`, `per_address`, `start_timeouts`)."""
        self.metrics: Any = None
        """The `aqueduct.metrics.Metrics` of this server (`serve(metrics=...)`), or None."""
        self.metrics_address: tuple[str, int] | None = None
        """Where the Prometheus endpoint listens (`serve(metrics=(host, port))`; port 0 picks one)."""
        self.worker_dir: Path | None = None
        """With `workers=N`: the private directory of the workers' sockets (give it to workers 1..N-1)."""
        self.webtransport: WebTransportSessions | None = None
        """With `webtransport=`: the live browser sessions (`live`), the refused requests (`refused`), the options."""

    def _on_protocol(self, protocol: AqueductProtocol) -> None:
        """A QUIC connection was accepted (the listener's callback, set by `serve`): make its Connection, hand it
        to `accept` once the client's headers arrived."""
        link = ConnectionLink(protocol, self._codec, self._entrypoint_type, self._schema, self._schema_check)
        conn: Connection[C] = Connection(link)
        if self._authenticate is not None:
            Admission(link, self._authenticate)
        if self._recorder is not None:
            from ..recording.hook import ConnectionRecording

            ConnectionRecording(link, self._recorder)
        if self.metrics is not None:
            self.metrics.track(link, accepted=True)
        self.connections.add(conn)
        link.closed.add_done_callback(lambda _: self.connections.discard(conn))

        def ready(fut: asyncio.Future[QuicLink]) -> None:
            if not fut.cancelled() and fut.exception() is None:
                self._queue.put_nowait(conn)

        link.ready.add_done_callback(ready)

    async def accept(self) -> Connection[C]:
        """The next connection whose client headers arrived (ConnectionLost once the server is closed)."""
        if self._closed:
            raise ConnectionLost("server closed")
        conn = await self._queue.get()
        if conn is None:
            raise ConnectionLost("server closed")
        return conn

    def __aiter__(self) -> AsyncIterator[Connection[C]]:
        return self

    async def __anext__(self) -> Connection[C]:
        try:
            return await self.accept()
        except ConnectionLost:
            raise StopAsyncIteration from None

    def stop_accepting(self) -> None:
        """Accept nothing more: `accept` raises ConnectionLost and `async for conn in server` ends (open
        connections go on; `drain` and leaving `serve` close them)."""
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(None)

    async def drain(self, grace: float = 10.0, *, poll: float = 0.05) -> None:
        """Shut down gracefully: accept nothing new, let open channels finish, then close with SHUTTING_DOWN.

        New connections are dropped from now on and `async for conn in server` ends. A connection is closed
        (code SHUTTING_DOWN) as soon as nothing but its entrypoint is open on it; whatever is still busy after
        `grace` seconds is closed then. Closes run concurrently (each waits at most CLOSE_WAIT seconds for its
        peer, one that vanished included), so this returns within about `grace` + CLOSE_WAIT seconds, once
        every connection has ended or that wait is over."""
        loop = asyncio.get_running_loop()
        self.admission.accepting = False
        self.stop_accepting()
        deadline = loop.time() + grace
        closing: list[asyncio.Future[None]] = []

        def close(conn: Connection[Any], reason: str) -> None:
            self.connections.discard(conn)
            closing.append(asyncio.ensure_future(conn.close(CloseCode.SHUTTING_DOWN, reason, timeout=CLOSE_WAIT)))

        while True:
            for conn in [c for c in self.connections if _idle(c)]:
                close(conn, "server shutting down")
            if not self.connections or loop.time() >= deadline:
                break
            await asyncio.sleep(poll)  # (a shutdown path: polling the engines' tables is simpler than events)
        for conn in list(self.connections):
            close(conn, "server shutting down: grace period over")
        await asyncio.gather(*closing, return_exceptions=True)


def _idle(conn: Connection[Any]) -> bool:
    """Nothing but (at most) the client's entrypoint is open on this server connection."""
    if conn.is_closed:
        return True
    senders, receivers = link_of(conn).engine.live_halves()
    return senders == 0 and receivers <= 1


class ServeOptions(TypedDict, total=False):
    """The keywords of `serve` besides `cert`, `key` and `entrypoint` (see `serve`)."""

    headers: HeaderItems | Mapping[str, bytes | str] | None
    codec: Codec | None
    single_use_tickets: bool
    settings: TransportSettings | None
    engine_config: EngineConfig | None
    record: Any
    metrics: Any
    schema_check: SchemaCheck
    client_ca: str | Path | None
    require_client_cert: bool
    allow_ca_client_cert: bool
    authenticate: Authenticate | None
    workers: int
    worker: int
    worker_dir: str | Path | None
    webtransport: bool | WebTransportOptions


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
def serve(
    host: str, port: int, *, cert: str | Path, key: str | Path, entrypoint: Any = None, **options: Any,
) -> contextlib.AbstractAsyncContextManager[Server[Any]]:
    """Listen for Aqueduct connections (port 0 picks a free one; see `server.address`; beyond 0-65535: ConfigError).

    `entrypoint=T`: each connection's `conn.entrypoint` is a `Receiver[T]` (every message converted to T);
    `entrypoint=OneOf(A, B)`: a `Receiver[A | B]`.
    `record`: a directory (or `aqueduct.recording.Recorder`) to record every connection's traffic into.
    `metrics`: `(host, port)` serves Prometheus metrics there (`server.metrics_address`; `(host, port,
    aqueduct.metrics.HttpLimits(...))` sets the endpoint's bounds), or an `aqueduct.metrics.Metrics` to count
    into (served by the caller).
    `workers=N, worker=i`: this process is worker i of N processes serving one UDP port (each calls `serve`
    with the same host, port and N; worker 0 may use port 0, the others then need its port): the kernel
    spreads clients over them, and a packet of a connection reaching another worker (after the client's
    address changed) is handed to its owner. `aqueduct serve --workers N` starts such processes. They hand
    packets over through sockets in a private directory worker 0 makes (`server.worker_dir`); the others
    are given it as `worker_dir` and refuse one that is not their user's alone (quic/workers.py).

    With `single_use_tickets` each session ticket resumes at most once, which makes 0-RTT replay
    impossible, so 0-RTT messages are processed before the handshake completes (see quic/tickets.py).

    `client_ca`: request a client certificate in every handshake and verify it against this CA file (mutual TLS;
    `require_client_cert=False` also admits clients without one); `conn.peer_identity` names the client. A client
    certificate that is itself a CA (basicConstraints CA:TRUE) is refused unless `allow_ca_client_cert=True`
    (without `client_ca`: ConfigError). No
    session tickets are issued then (a resumed session shows no certificate), so there is no 0-RTT.
    `authenticate`: `async def cb(headers, peer_identity) -> identity` runs once each client's headers arrive,
    before anything else of it is processed; it returns what `conn.identity` becomes, or raises to refuse the
    client (close code AUTHENTICATION_FAILED; see api/auth.py).
    `webtransport=True` (or `aqueduct.WebTransportOptions(path=, origins=, max_sessions=)`): browsers' WebTransport
    sessions are accepted on the same UDP port too (at `https://host:port/aqueduct` by default); they reach the
    same `async for conn in server`, with `conn.transport == "webtransport"` (quic/webtransport.py). Browsers
    accept a self-signed certificate through `serverCertificateHashes` only when it is ECDSA and valid for at
    most 14 days (`aqueduct.quic.webtransport_cert.make_browser_cert`).
    """
    check_port(port)
    if isinstance(options.get("metrics"), tuple):
        check_port(options["metrics"][1], "metrics port")
    return _serve(host, port, cert=cert, key=key, entrypoint=type_of(entrypoint), **options)


@contextlib.asynccontextmanager
async def _serve(
    host: str,
    port: int,
    *,
    entrypoint: Any,
    cert: str | Path,
    key: str | Path,
    headers: HeaderItems | Mapping[str, bytes | str] | None = None,
    codec: Codec | None = None,
    single_use_tickets: bool = False,
    settings: TransportSettings | None = None,
    engine_config: EngineConfig | None = None,
    record: Any = None,
    metrics: Any = None,
    schema_check: SchemaCheck = "exact",
    client_ca: str | Path | None = None,
    require_client_cert: bool = True,
    allow_ca_client_cert: bool = False,
    authenticate: Authenticate | None = None,
    workers: int = 1,
    worker: int = 0,
    worker_dir: str | Path | None = None,
    webtransport: bool | WebTransportOptions = False,
) -> AsyncIterator[Server[Any]]:
    server: Server[Any] = Server(codec or DEFAULT_CODEC, entrypoint, schema_check, authenticate)
    if allow_ca_client_cert and client_ca is None:
        raise ConfigError("allow_ca_client_cert=True needs client_ca (the CA file client certificates are checked "
                          "against)")
    client_auth = (ClientAuth.load(client_ca, required=require_client_cert, allow_ca_leaf=allow_ca_client_cert)
                   if client_ca is not None else None)
    engine_config = api_engine_config(engine_config)
    if authenticate is not None:
        engine_config = replace(engine_config, hold_until_accepted=True)
    if webtransport:
        options = webtransport if isinstance(webtransport, WebTransportOptions) else WebTransportOptions()
        server.webtransport = WebTransportSessions(options)
    transport, quic_server = await open_server(
        host, port, cert=cert, key=key, on_connection=lambda p: server._on_protocol(p),
        headers=_headers(headers, server._codec, server._schema), settings=settings, engine_config=engine_config,
        tickets=ServerTicketStore(single_use=single_use_tickets), client_auth=client_auth, workers=workers,
        worker=worker, worker_dir=worker_dir, webtransport=server.webtransport,
    )
    server.worker_dir = quic_server.workers.directory if quic_server.workers is not None else None
    sockname = transport.get_extra_info("sockname")
    server.address = (sockname[0], sockname[1])
    server.admission = quic_server
    metrics_http = None
    if metrics is not None:
        from ..metrics import Metrics

        server.metrics = metrics if isinstance(metrics, Metrics) else Metrics()
        server.metrics.refused_by = quic_server
        if not isinstance(metrics, Metrics):
            metrics_http = await server.metrics.start_http(*metrics)
            name = metrics_http.sockets[0].getsockname()
            server.metrics_address = (name[0], name[1])
    owned_recorder = False
    if record is not None:
        from ..recording.hook import open_recorder

        server._recorder, owned_recorder = open_recorder(record)
    try:
        yield server
    finally:
        server.stop_accepting()
        await asyncio.gather(*(conn.close(timeout=CLOSE_WAIT) for conn in list(server.connections)),
                             return_exceptions=True)
        quic_server.close()
        if server.metrics is not None:
            server.metrics.stop()
        if metrics_http is not None:
            metrics_http.close()
            await metrics_http.wait_closed()
        if owned_recorder:
            await asyncio.to_thread(server._recorder.close)

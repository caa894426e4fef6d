"""`aqueduct serve`: run the echo service (raw codec), or a service of yours, until stopped.

Two services: `--echo` (the default: the interop echo service, raw codec) or `--service MODULE:CLASS`, an
implementation of an `aqueduct.Service` interface made with no arguments (`aqueduct serve --service
calc:Calc` serves the Services guide's calculator; the module is imported from the current directory
first; decision PROJ-6). Ports beyond 0-65535 are refused (ConfigError) before anything starts.

Prints `listening on HOST:PORT` as the first stdout line (flushed; port 0
picks a free port) and one line per connection when it ends. SIGTERM drains
it (`Server.drain`: no new connections, open channels get `--grace` seconds
to finish, then each connection closes with SHUTTING_DOWN) and it exits 0;
Ctrl-C closes at once. Either way the server closes, so a `--record`
recording is sealed. `--limit NAME=VALUE` sets any field of EngineConfig or
TransportSettings (the limits SECURITY.md lists); `--client-ca FILE` serves
only clients with a certificate from that CA (mutual TLS).

`--webtransport` also accepts browsers' WebTransport sessions on the same UDP port (at
`--webtransport-path`, from the `--origin`s given, any without one; serve(webtransport=...));
quic/webtransport_cert.py makes a certificate a page trusts by its hash.

`--workers N` serves the port from N processes (quic/workers.py): this
process is worker 0; it binds the port, then starts workers 1..N-1 (the same
command with `--worker I` and `--worker-dir`, the private directory of their
sockets that worker 0 made), waits until each listens, prints `listening on`
and then one `workers: ...` line with their pids. It relays their lines,
passes SIGTERM on (each drains), and ends them when it ends. `--record`,
`--metrics-port` and `--otlp-endpoint` are per process, so they are refused
with `--workers`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import importlib
import inspect
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from ..api.codec import RawCodec
from ..api.echo import echo_connection
from ..api.endpoints import Server, check_port
from ..core.config import EngineConfig
from ..errors import ConfigError
from ..metrics import Metrics
from ..quic.settings import TransportSettings
from ..quic.webtransport import WebTransportOptions
from ..quic.workers import MAX_WORKERS
from ..services.endpoints import serve as serve_service
from ..services.interface import Service
from ._record import add_record_arguments, recorder

if TYPE_CHECKING:
    from ..metrics_otel import OtlpExport


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the `serve` subcommand."""
    p = sub.add_parser("serve", help="run an Aqueduct service: the interop echo service, or a service of yours")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--echo", action="store_true",
                       help="run the interop echo service (raw codec; the default)")
    which.add_argument("--service", metavar="MODULE:CLASS",
                       help="run your aqueduct.Service implementation CLASS of MODULE (made with no arguments; "
                            "MODULE is looked for in the current directory first), e.g. calc:Calc")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=4433, help="UDP port (default: 4433; 0: pick a free one)")
    p.add_argument("--cert", required=True, help="server certificate chain (PEM)")
    p.add_argument("--key", required=True, help="server private key (PEM)")
    p.add_argument("--client-ca", metavar="FILE",
                   help="require a client certificate signed by this CA (PEM; mTLS, see `aqueduct cert --client`)")
    p.add_argument("--single-use-tickets", action="store_true",
                   help="single-use session tickets: 0-RTT data is processed before the handshake ends (replay-safe)")
    add_record_arguments(p, "every connection's traffic")
    p.add_argument("--metrics-port", type=int, metavar="P",
                   help="serve Prometheus metrics on http://HOST:P/metrics (HOST: --metrics-host; 0: pick a port)")
    p.add_argument("--metrics-host", default="127.0.0.1", help="address of the metrics endpoint (default: 127.0.0.1)")
    p.add_argument("--otlp-endpoint", metavar="URL",
                   help="also push the metrics over OTLP/HTTP to URL, e.g. http://127.0.0.1:4318/v1/metrics "
                        "(the otel extra)")
    p.add_argument("--otlp-interval", type=float, default=10.0, metavar="S",
                   help="seconds between OTLP exports (default: 10)")
    p.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                   help="set a limit or timing of EngineConfig or TransportSettings (repeatable; see SECURITY.md), "
                        "e.g. --limit max_channels=1000")
    p.add_argument("--grace", type=float, default=10.0,
                   help="seconds open channels get to finish after SIGTERM (default: 10)")
    p.add_argument("--workers", type=int, default=1,
                   help="processes serving the port (SO_REUSEPORT; default 1; Linux)")
    p.add_argument("--webtransport", action="store_true",
                   help="also accept browsers' WebTransport sessions (HTTP/3) on the same UDP port")
    p.add_argument("--webtransport-path", default="/aqueduct", metavar="PATH",
                   help="the URL path pages connect to (default: /aqueduct)")
    p.add_argument("--origin", action="append", default=None, metavar="ORIGIN",
                   help="a page origin allowed to open a session (repeatable; default: any origin)")
    p.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)  # set for the processes it starts
    p.add_argument("--worker-dir", help=argparse.SUPPRESS)  # worker 0's private directory of sockets, for them
    p.set_defaults(func=run)


async def _start_workers(args: argparse.Namespace, port: int, worker_dir: object) -> list[asyncio.subprocess.Process]:
    """Worker 0 starts workers 1..N-1 on its port; each has printed its first line when this returns."""
    procs = []
    for i in range(1, args.workers):
        service = ["--service", args.service] if args.service else ["--echo"]
        cmd = [sys.executable, "-m", "aqueduct", "serve", *service, "--host", args.host, "--port", str(port),
               "--cert", args.cert, "--key", args.key, "--grace", str(args.grace), "--workers", str(args.workers),
               "--worker", str(i), "--worker-dir", str(worker_dir),
               *(["--single-use-tickets"] if args.single_use_tickets else []),
               *(["--client-ca", args.client_ca] if args.client_ca else []),
               *(["--webtransport", "--webtransport-path", args.webtransport_path] if args.webtransport else []),
               *(arg for origin in args.origin or () for arg in ("--origin", origin)),
               *(arg for item in args.limit for arg in ("--limit", item))]
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE)
        procs.append(proc)
        assert proc.stdout is not None
        if not (await proc.stdout.readline()).startswith(b"listening on "):
            raise OSError(f"worker {i} did not start (exit code {await proc.wait()})")
    return procs


async def _relay(proc: asyncio.subprocess.Process, worker: int) -> None:
    assert proc.stdout is not None
    async for line in proc.stdout:
        print(f"worker {worker}: {line.decode().rstrip()}", flush=True)


async def _stop_workers(procs: list[asyncio.subprocess.Process], relays: list[asyncio.Task[None]]) -> None:
    for proc in procs:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
    for proc in procs:
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    await asyncio.gather(*relays, return_exceptions=True)


def limits(assignments: list[str]) -> tuple[EngineConfig, TransportSettings]:
    """EngineConfig and TransportSettings with `NAME=VALUE` overrides (ConfigError for an unknown name or value)."""
    engine: dict[str, Any] = {}
    transport: dict[str, Any] = {}
    for item in assignments:
        name, sep, text = item.partition("=")
        target = engine if name in _ENGINE_FIELDS else transport if name in _TRANSPORT_FIELDS else None
        if target is None or not sep:
            raise ConfigError(f"--limit {item}: not NAME=VALUE with NAME a field of EngineConfig or TransportSettings")
        kind = (_ENGINE_FIELDS | _TRANSPORT_FIELDS)[name]
        try:
            target[name] = None if text == "none" else (text in ("1", "true", "yes")) if kind is bool else kind(text)
        except ValueError:
            raise ConfigError(f"--limit {item}: {text!r} is not a {kind.__name__}") from None
    return EngineConfig(**engine), TransportSettings(**transport)


def _field_types(cls: type) -> dict[str, type]:
    return {f.name: type(getattr(cls(), f.name)) for f in dataclasses.fields(cls)}


_ENGINE_FIELDS = _field_types(EngineConfig)
_TRANSPORT_FIELDS = _field_types(TransportSettings)


async def _main(args: argparse.Namespace, record: object) -> None:
    engine_config, settings = limits(args.limit)
    metrics: Any = None if args.metrics_port is None else (args.metrics_host, args.metrics_port)
    if args.otlp_endpoint is not None:
        import opentelemetry.sdk  # noqa: F401  (before the server starts: a missing extra says so at once)

        if metrics is None:
            metrics = Metrics()
    served: dict[str, Any] = {"service": service_of(args.service)} if args.service else {"codec": RawCodec()}
    async with serve_service(args.host, args.port, cert=args.cert, key=args.key, **served,
                             single_use_tickets=args.single_use_tickets, record=record, metrics=metrics,
                             engine_config=engine_config, settings=settings, client_ca=args.client_ca,
                             workers=args.workers, worker=args.worker, worker_dir=args.worker_dir,
                             webtransport=_webtransport(args)) as server:
        export: OtlpExport | None = None
        if args.otlp_endpoint is not None:
            from ..metrics_otel import export_otlp

            export = export_otlp(server.metrics, args.otlp_endpoint, interval=args.otlp_interval)
        try:
            await _serve(server, args)
        finally:
            if export is not None:
                await export.close()


def _webtransport(args: argparse.Namespace) -> WebTransportOptions | bool:
    if not args.webtransport:
        if args.origin is not None or args.webtransport_path != "/aqueduct":
            raise ConfigError("--origin and --webtransport-path need --webtransport")
        return False
    return WebTransportOptions(path=args.webtransport_path,
                               origins=tuple(args.origin) if args.origin is not None else None)


async def _serve(server: Server[Any], args: argparse.Namespace) -> None:
    drained: list[asyncio.Task[None]] = []
    stopping = asyncio.Event()
    host, port = server.address
    others = await _start_workers(args, port, server.worker_dir) if args.worker == 0 else []
    relays = [asyncio.ensure_future(_relay(proc, i + 1)) for i, proc in enumerate(others)]

    def on_sigterm() -> None:
        if not drained:
            print(f"draining: no new connections; open channels get {args.grace} s to finish", flush=True)
            for proc in others:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
            drained.append(asyncio.ensure_future(server.drain(args.grace)))
            stopping.set()

    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_sigterm)
    print(f"listening on {host}:{port}", flush=True)
    if others:
        print(f"workers: {args.workers} processes sharing the port, pids "
              f"{', '.join(str(p) for p in [os.getpid(), *(proc.pid for proc in others)])}", flush=True)
    try:
        await _serve_connections(server, args, drained, stopping)
    finally:
        await _stop_workers(others, relays)


async def _serve_connections(server: Server[Any], args: argparse.Namespace,
                             drained: list[asyncio.Task[None]], stopping: asyncio.Event) -> None:
    """Accept and serve connections (the echo rule) until the server stops accepting; a service's server
    accepts and serves its connections itself, until SIGTERM's drain (or Ctrl-C)."""
    if server.metrics_address is not None:
        print(f"metrics on http://{server.metrics_address[0]}:{server.metrics_address[1]}/metrics", flush=True)
    if args.otlp_endpoint is not None:
        print(f"metrics pushed over OTLP to {args.otlp_endpoint} every {args.otlp_interval:g} s", flush=True)
    if args.service:
        await stopping.wait()
        await drained[0]
        return
    tasks: set[asyncio.Task[None]] = set()

    async def one(conn: object) -> None:
        from ..api.connection import Connection

        assert isinstance(conn, Connection)
        peer = conn.peer_address
        where = f"{peer[0]}:{peer[1]}" if peer is not None else "an unknown address"
        if conn.peer_identity is not None:
            where += f" ({conn.peer_identity.subject})"
        n = await echo_connection(conn)
        ev = await conn.wait_closed()
        if conn.transport == "webtransport":
            where += " (WebTransport)"
        print(f"connection from {where} ended: {n} entrypoint messages, "
              f"{conn.stats.messages_received} received, {conn.stats.messages_sent} sent, "
              f"close code {ev.error_code}", flush=True)

    async for conn in server:
        task = asyncio.ensure_future(one(conn))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if drained:  # the drain ended the loop: let it finish before the server closes what is left
        await drained[0]
        await asyncio.gather(*tasks, return_exceptions=True)  # each prints its connection's line


def service_of(spec: str) -> Any:
    """An instance of the `aqueduct.Service` implementation `module:Class` (ConfigError saying why not)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"--service {spec}: expected MODULE:CLASS, e.g. calc:Calc")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        cls: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            cls = getattr(cls, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"--service {spec}: cannot load it: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, Service)) or inspect.isabstract(cls):
        raise ConfigError(f"--service {spec}: not an implementation of an aqueduct.Service interface")
    return cls()


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    check_port(args.port, "--port")
    if args.metrics_port is not None:
        check_port(args.metrics_port, "--metrics-port")
    if not 1 <= args.workers <= MAX_WORKERS or not 0 <= args.worker < args.workers:
        print(f"aqueduct serve: --workers must be 1 to {MAX_WORKERS}", file=sys.stderr)
        return 2
    if args.workers > 1 and (args.record is not None or args.metrics_port is not None
                             or args.otlp_endpoint is not None):
        print("aqueduct serve: --record, --metrics-port and --otlp-endpoint serve one process: not with --workers",
              file=sys.stderr)
        return 2
    rec = recorder(args)
    try:
        asyncio.run(_main(args, rec))
    except OSError as exc:
        print(f"aqueduct serve: {exc}", file=sys.stderr)
        return 1
    finally:
        if rec is not None:
            rec.close()  # seals the last segment
    return 0

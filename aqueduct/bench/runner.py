"""One benchmark run: start the peer, run every transport's workloads in alternating rounds, gather figures.

Transports are visited in a different rotation each round, so slow drift of
the machine (other processes, thermal) spreads over all of them; each
(transport, workload) cell keeps one value per round. The engine-only
costs run in a fresh process (engine.py) so its resident memory is its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.app import Delivery
from ..quic.certs import make_dev_certs
from . import peer
from .clients import AqueductClient, TcpClient, median, percentile
from .extras import extras
from .lab import GRPC_TLS, PeerRow
from .rawquic import RawQuicClient

MB = 1_000_000


@dataclass(frozen=True)
class Workload:
    """One measured quantity."""

    key: str
    title: str
    unit: str
    higher_is_better: bool = True
    reference: str | None = None
    """The transport its ratios compare with, when not the row's own reference (the request/reply rows:
    grpcio over TLS)."""


WORKLOADS = [
    Workload("msg64", "64 B one way", "msgs/s"),
    Workload("msg16k", "16 KiB one way", "MB/s"),
    Workload("bulk", "bulk (256 KiB messages)", "MB/s"),
    Workload("rtt_p50", "64 B round trip p50", "us", False),
    Workload("rtt_p99", "64 B round trip p99", "us", False),
    Workload("channels", "channel creation (one per message)", "channels/s"),
    Workload("setup_1rtt", "connect to first echo, 1-RTT", "ms", False),
    Workload("setup_0rtt", "connect to first echo, 0-RTT", "ms", False),
    Workload("hs_seq", "handshakes, sequential", "/s"),
    Workload("hs_32", "handshakes, 32 concurrent", "/s"),
    Workload("conn_mem", "server memory per idle connection (RSS)", "B", False),
    Workload("rtt_idle_server", "64 B echo p50, new connection, idle server", "us", False),
    Workload("rtt_loaded", "64 B echo p50, new connection, server holding the idle ones", "us", False),
    Workload("connect_loaded", "connect, server holding the idle ones", "ms", False),
    *(w for n in (1, 32) for w in (
        Workload(f"rr{n}", f"request/reply, {n} in flight", "calls/s", reference=GRPC_TLS),
        Workload(f"rr{n}_p50", f"request/reply, {n} in flight, p50", "us", False, GRPC_TLS),
        Workload(f"rr{n}_p99", f"request/reply, {n} in flight, p99", "us", False, GRPC_TLS),
        Workload(f"rr{n}_cpu_server", f"request/reply, {n} in flight, server CPU", "us/call", False, GRPC_TLS),
        Workload(f"rr{n}_cpu_client", f"request/reply, {n} in flight, client CPU", "us/call", False, GRPC_TLS),
    )),
]
CONNECTION_WORKLOADS = ("hs_seq", "hs_32", "conn_mem", "rtt_idle_server", "rtt_loaded", "connect_loaded")
"""Measured by connections.py (`--connections`) for the "aqueduct ordered raw" and "aioquic" rows."""
BY_KEY = {w.key: w for w in WORKLOADS}


def uvloop_available() -> bool:
    """Whether uvloop is installed (the optional extra 'fast')."""
    import importlib.util

    return importlib.util.find_spec("uvloop") is not None


@dataclass(frozen=True)
class Transport:
    """One benchmarked transport and the workloads it runs."""

    name: str
    family: str
    workloads: tuple[str, ...]
    codec: str = "raw"
    mode: Delivery = Delivery.ORDERED
    reference: str = "aioquic"
    tuned: bool = False
    typed: bool = False
    """Typed rows: a 3-field message type checked by the sender and converted by the receiver (bench/typed.py)."""


PER_MESSAGE = "aioquic stream per message"
"""The unordered rows' reference: raw aioquic, each message on its own new unidirectional stream."""
FULL = ("msg64", "msg16k", "bulk", "rtt_p50", "rtt_p99", "channels", "setup_1rtt", "setup_0rtt")
TRANSPORTS = [
    Transport("aqueduct ordered raw", "aqueduct", FULL),
    Transport("aqueduct unordered raw", "aqueduct", ("msg64", "msg16k", "rtt_p50", "rtt_p99"), mode=Delivery.UNORDERED,
              reference=PER_MESSAGE),
    Transport("aqueduct unreliable raw", "aqueduct", ("msg64",), mode=Delivery.UNRELIABLE,
              reference="aioquic datagrams"),
    Transport("aqueduct ordered cbor", "aqueduct", FULL, codec="cbor"),
    Transport("aqueduct unordered cbor", "aqueduct", ("msg64", "msg16k", "rtt_p50", "rtt_p99"), codec="cbor",
              mode=Delivery.UNORDERED, reference=PER_MESSAGE),
    Transport("aqueduct unreliable cbor", "aqueduct", ("msg64",), codec="cbor", mode=Delivery.UNRELIABLE,
              reference="aioquic datagrams"),
    Transport("aqueduct ordered cbor typed", "aqueduct", ("msg64", "channels"), codec="cbor", typed=True),
    Transport("aqueduct ordered raw tuned", "aqueduct", ("msg64", "msg16k", "bulk", "rtt_p50", "rtt_p99"),
              tuned=True),
    Transport("aqueduct unreliable raw tuned", "aqueduct", ("msg64",), mode=Delivery.UNRELIABLE,
              reference="aioquic datagrams", tuned=True),
    Transport("aioquic", "aioquic", ("msg64", "msg16k", "bulk", "rtt_p50", "rtt_p99", "setup_1rtt", "setup_0rtt")),
    Transport("aioquic datagrams", "datagrams", ("msg64",), reference="aioquic datagrams"),
    Transport(PER_MESSAGE, "aioquic per message", ("msg64", "msg16k", "rtt_p50", "rtt_p99")),
    Transport("tcp", "tcp", ("msg64", "msg16k", "bulk", "rtt_p50", "rtt_p99", "setup_1rtt")),
    *(Transport(extra.name, extra.key, extra.workloads) for extra in extras()),  # e.g. aeron_compat's Marlin Stream
]
BY_NAME = {t.name: t for t in TRANSPORTS}


@dataclass
class Options:
    """Knobs of a run (the CLI's flags)."""

    rounds: int = 5
    window: float = 0.3
    """Seconds each throughput or round-trip measurement runs."""
    setups: int = 3
    """Connections per set-up measurement (their median is the round's value)."""
    api_channels: int = 10_000
    """Idle channels opened through the API for the memory figure (0: skip)."""
    engine_channels: int = 100_000
    """Idle channels for the engine memory figure and the top of the throughput curve (0: skip engine costs)."""
    cascade: int = 10_000
    engine_messages: int = 20_000
    only: tuple[str, ...] = ()
    """Substrings of transport names to run (empty: all)."""
    uvloop: bool = False
    loss_curves: bool = False
    """Also measure bulk goodput at 0/1/5% loss through the impairment proxy (loss.py)."""
    loss_window: float = 1.0
    loss_rounds: int = 3
    connections: bool = False
    """Also measure the connection rows (connections.py)."""
    services: bool = False
    """Also measure the service rows (services.py): service calls beside request and grpcio's unary call."""
    connection_window: float = 1.0
    """Seconds per handshake-rate measurement and per echo-p50 measurement of the connection rows."""
    idle: int = 10_000
    """Idle connections the connection rows hold (0: skip the memory and loaded-server rows)."""
    idle_budget: float = 180.0
    """Seconds each kind may spend opening them (a loaded machine opens fewer: the table says how many)."""
    peers: bool = False
    """Also measure the peer rows (peers/: grpcio, ZeroMQ, NATS and Aqueduct in the same harness)."""
    peer_idle: int = 200
    """Idle connections per peer row for its server memory per connection (first round only; 0: skip)."""


@dataclass
class Results:
    """Everything one run measured."""

    options: dict[str, Any]
    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    zero_rtt_accepted: dict[str, str] = field(default_factory=dict)
    api_memory: dict[str, float] = field(default_factory=dict)
    engine: dict[str, Any] = field(default_factory=dict)
    loss: list[dict[str, Any]] = field(default_factory=list)
    """The loss curves (loss.curves), when asked for."""
    kernel_loss: list[dict[str, Any]] = field(default_factory=list)
    """The kernel-loss curves (netloss.py, TCP included), when asked for and root; else why not, below."""
    kernel_loss_unavailable: str | None = None
    connections: dict[str, Any] = field(default_factory=dict)
    """Per connection-server kind: idle connections asked for and held, time to open them (connections.py)."""
    unmeasured: dict[str, str] = field(default_factory=dict)
    """Rows not measured (or not in every round), and why: a peer's library or program missing, its server did
    not start, a measuring process failed (the run goes on without that row's round)."""
    services: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    """The service rows (services.py), when asked for: per row, calls_s, p50_us and p99_us per round."""
    environment: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


def peer_rows() -> list[PeerRow]:
    """The lab's peer rows (benchmarks/peers/, from a checkout: lab.py; LabNotFound elsewhere)."""
    from . import lab

    rows: list[PeerRow] = lab.load("peers").ROWS
    return rows


def selected(opts: Options) -> list[Transport | PeerRow]:
    """The rows a run visits each round: the transports, then (with `peers`) the peer rows; `only` filters."""
    rows: list[Transport | PeerRow] = [*TRANSPORTS, *(peer_rows() if opts.peers else [])]
    return [r for r in rows if not opts.only or any(s in r.name for s in opts.only)]


def _make_client(t: Transport, ports: dict[str, int], ca: Path) -> Any:
    if t.family == "aqueduct":
        port = ports["aqueduct-tuned" if t.tuned else f"aqueduct-{t.codec}"]
        return AqueductClient(port, ca, t.codec, t.mode, tuned=t.tuned, typed=t.typed)
    if t.family == "tcp":
        return TcpClient(ports["tcp"])
    extra = next((e for e in extras() if e.key == t.family), None)
    if extra is not None:
        return extra.client(ports[t.family])
    return RawQuicClient(ports["aioquic"], ca, datagrams=t.family == "datagrams",
                         per_message=t.family == "aioquic per message")


WARMUP = 0.1
"""Seconds of unrecorded 64 B sending on each new connection before its measurements (every transport
alike): the figures are steady-state rates, not a fresh connection's congestion-window ramp."""


async def _measure(client: Any, t: Transport, opts: Options, record: Callable[[str, float], None]) -> None:
    w = opts.window
    if "msg64" in t.workloads:
        await client.oneway(64, min(WARMUP, w), 10_000_000)
    if "msg64" in t.workloads:
        r = await client.oneway(64, w, 10_000_000)
        record("msg64", r.messages / r.seconds)
    if "msg16k" in t.workloads:
        r = await client.oneway(16 * 1024, w, 1_000_000)
        record("msg16k", r.nbytes / r.seconds / MB)
    if "bulk" in t.workloads:
        r = await client.oneway(256 * 1024, w, 100_000)
        record("bulk", r.nbytes / r.seconds / MB)
    if "rtt_p50" in t.workloads:
        lat = await client.rtt(64, w, 100_000)
        record("rtt_p50", percentile(lat, 0.5) * 1e6)
        record("rtt_p99", percentile(lat, 0.99) * 1e6)
    if "channels" in t.workloads:
        r = await client.channels(w, 1_000_000)
        record("channels", r.messages / r.seconds)


async def _setups(client: Any, t: Transport, opts: Options, record: Callable[[str, float], None],
                  accepted: dict[str, list[bool]]) -> None:
    if "setup_1rtt" in t.workloads:
        record("setup_1rtt", median([(await client.setup(False))[0] for _ in range(opts.setups)]) * 1000)
    if "setup_0rtt" in t.workloads:
        await client.setup(True)  # obtains the first ticket
        runs = [await client.setup(True) for _ in range(opts.setups)]
        accepted.setdefault(t.name, []).extend(ok for _, ok in runs)
        record("setup_0rtt", median([took for took, _ in runs]) * 1000)


async def _measure_remote(t: Transport, port: int, ca: Path, opts: Options, fast: bool,
                          record: Callable[[str, float], None]) -> None:
    """A tuned row: its own measuring process (on uvloop when `fast`)."""
    import asyncio

    cmd = [sys.executable, "-m", "aqueduct.bench.remote", "--port", str(port), "--ca", str(ca), "--transport", t.name,
           "--window", str(opts.window), *(["--uvloop"] if fast else [])]
    proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()
        raise RuntimeError(f"its measuring process ended {proc.returncode}: {tail[-1] if tail else 'no message'}")
    for key, value in json.loads(out).items():
        record(key, value)


async def _measure_peer(peer_servers: Any, row: PeerRow, server: dict[str, Any], ca: Path, opts: Options, rnd: int,
                        record: Callable[[str, float], None], results: Results) -> None:
    """A peer row's round in its measuring process; a failure is reported (`unmeasured`), not raised."""
    try:
        values = await peer_servers.measure_row(row, server, ca, opts.window, opts.setups,
                                                opts.peer_idle if rnd == 0 else 0, opts.uvloop)
    except RuntimeError as e:
        results.unmeasured[row.name] = f"round {rnd + 1} failed: {e}"
        return
    for key, value in values.items():
        record(key, value)


def _engine_costs(opts: Options) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "aqueduct.bench.engine", "--channels", str(opts.engine_channels),
           "--cascade", str(opts.cascade), "--messages", str(opts.engine_messages),
           "--traced", str(min(opts.engine_channels, 10_000))]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _environment(opts: Options) -> dict[str, Any]:
    from .machine import facts

    return {**facts(), "loop": "uvloop" if opts.uvloop else "asyncio"}


async def run(opts: Options, progress: Callable[[str], None] = lambda _: None) -> Results:
    """Run the whole suite."""
    started = time.perf_counter()
    results = Results(options=asdict(opts), environment=_environment(opts))
    rows = selected(opts)
    transports = [t for t in rows if isinstance(t, Transport)]
    peers = [r for r in rows if not isinstance(r, Transport)]
    accepted: dict[str, list[bool]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        certs = make_dev_certs(tmp)
        proc, ports = peer.spawn(str(certs.cert), str(certs.key), opts.uvloop)
        fast = uvloop_available() and any(t.tuned for t in transports)
        fast_proc, fast_ports = peer.spawn(str(certs.cert), str(certs.key), True) if fast else (None, ports)
        results.environment["tuned_loop"] = "uvloop" if fast else results.environment["loop"]
        if peers:
            from . import lab

            peer_servers: Any = lab.load("peers.run")
        servers = peer_servers.Servers() if peers else None
        try:
            if servers is not None:
                servers.start(peer_servers.kinds_of(peers), certs.cert, certs.key, opts.uvloop)
            for row in peers:
                assert servers is not None
                if row.kind in servers.reasons:
                    results.unmeasured[row.name] = f"not measured: {servers.reasons[row.kind]}"
            rows = [r for r in rows if r.name not in results.unmeasured]
            for rnd in range(opts.rounds):
                shift = rnd % max(1, len(rows))
                for t in rows[shift:] + rows[:shift]:
                    progress(f"round {rnd + 1}/{opts.rounds}: {t.name}")
                    cells = results.samples.setdefault(t.name, {})

                    def record(key: str, value: float, cells: dict[str, list[float]] = cells) -> None:
                        cells.setdefault(key, []).append(value)

                    if not isinstance(t, Transport):
                        assert servers is not None
                        await _measure_peer(peer_servers, t, servers.info[t.kind], certs.ca, opts, rnd, record,
                                            results)
                        continue
                    if t.tuned:
                        try:
                            await _measure_remote(t, fast_ports["aqueduct-tuned"], certs.ca, opts, fast, record)
                        except RuntimeError as e:
                            results.unmeasured[t.name] = f"round {rnd + 1} failed: {e}"
                        continue
                    client = _make_client(t, ports, certs.ca)
                    await client.open()
                    try:
                        await _measure(client, t, opts, record)
                    finally:
                        await client.close()
                    await _setups(client, t, opts, record, accepted)
            aq = next((t for t in transports if t.name == "aqueduct ordered raw"), None)
            if opts.api_channels and aq is not None:
                progress(f"API memory: {opts.api_channels} idle channels")
                client = _make_client(aq, ports, certs.ca)
                await client.open()
                n, ours, theirs = await client.hold(opts.api_channels)
                await client.close()
                results.api_memory = {"channels": n, "sender_side_bytes": ours / n, "receiver_side_bytes": theirs / n,
                                      "per_channel_bytes": (ours + theirs) / n}
            if opts.loss_curves:
                from . import loss

                proxy_proc, proxy_ports = loss.start_proxies(ports)
                try:
                    samples = await loss.measure(proxy_ports, certs.ca, opts.loss_window, opts.loss_rounds, progress)
                finally:
                    peer.stop(proxy_proc)
                results.loss = loss.curves(samples)
                from . import netloss

                results.kernel_loss_unavailable = netloss.reason_unavailable()
                if results.kernel_loss_unavailable is None:
                    results.kernel_loss = loss.curves(
                        await netloss.measure(opts.loss_window, opts.loss_rounds, progress))
            if opts.services:
                from . import lab

                services = lab.load("services")
                results.services = await services.measure(Path(tmp), opts.connection_window, opts.rounds, progress)
            if opts.connections:
                from . import connections

                def record_connection(transport: str, key: str, value: float) -> None:
                    results.samples.setdefault(transport, {}).setdefault(key, []).append(value)

                results.connections = await connections.measure(
                    certs, opts.connection_window, opts.rounds, opts.idle, record_connection, progress,
                    opts.idle_budget)
        finally:
            if servers is not None:
                servers.stop()
            for p in (proc, fast_proc):
                if p is not None:
                    peer.stop(p)
    for name, cells in list(results.samples.items()):
        if not cells:
            del results.samples[name]  # (a peer row whose every round failed)
    results.zero_rtt_accepted = {k: f"{sum(v)}/{len(v)}" for k, v in accepted.items()}
    if opts.engine_channels:
        progress(f"engine-only costs ({opts.engine_channels} channels)")
        results.engine = _engine_costs(opts)
    results.seconds = time.perf_counter() - started
    results.environment["load_average_at_end"] = list(os.getloadavg())
    return results

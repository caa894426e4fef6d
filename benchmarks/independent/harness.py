"""An independent harness for issue 34's targets, written as a new user would: the public API only.

Theory of operation. `python benchmarks/independent/harness.py` (run as a script, so `import aqueduct` finds
whatever the interpreter has installed, not the checkout's package) makes a dev CA with `aqueduct cert`, then
starts three server processes, one per system, each listening on 127.0.0.1 port 0 and answering a small JSON
control socket (its counters and its process CPU time):

- aqueduct: `aqueduct.serve(entrypoint=Echo)` where `Echo` carries `reply: aqueduct.OneshotSender[bytes]`, and
  `aqueduct.serve(service=EchoImpl())` for a typed `aqueduct.Service`; it counts each request, each request's
  reply sender that arrived over the network (a new channel per call), each service call, and each connection
  its connect rows made (a header names the row) with whether it was accepted as 0-RTT;
- grpc: grpcio's aio server with TLS and a generic unary handler over bytes (no generated code); it counts
  calls, the distinct client connections (`context.peer()`) and the calls that arrived over TLS;
- aioquic: aioquic's own server with a tiny stream echo; it counts handshakes and the 0-RTT ones.

and one client process per system, which does the rows of its system each time it reads a line on stdin and
prints one JSON line per round: seconds, latencies, its own CPU time, and the server's counters and CPU time
read before and after the row. Rounds alternate the systems (A, B, C then C, B, A). Every loop is bounded (a
number of calls or connects, every call with a timeout); nothing listens beyond loopback.

At the end each row's far-side counts are checked against what the row says it did (a mismatch is printed
and the exit status is 1), and the targets are printed with the spread over rounds (median, min, max of the
per-round ratio), beside which aqueduct ran: the imported module's path, whether it is an installed wheel,
and `aqueduct.compiled()`. `--require-wheel` refuses to run anything else; `--json PATH` writes every row.

This file shares no code with aqueduct/bench or benchmarks/peers on purpose: it is a second instrument
(decision PERF-50).
"""

from __future__ import annotations

import abc
import argparse
import asyncio
import importlib.metadata
import json
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aqueduct

SYSTEMS = ("aqueduct", "grpc", "aioquic")
ALPN = "independent-echo"
GRPC_METHOD = "/independent.Echo/Call"
CALL_TIMEOUT = 10.0
"""Seconds any one call, connect or control exchange may take before the row fails (bounds every wait)."""


@dataclass(frozen=True)
class Sizes:
    """How much one round does."""

    calls: int
    """Calls at 1 in flight (the request, service and grpcio rows)."""
    calls_32: int
    """Calls at 32 in flight (32 callers, calls_32 // 32 each)."""
    connects: int
    """New connections per connect row."""
    warmup: int
    """Untimed calls before the first round."""
    size: int
    """Payload bytes per call."""


QUICK = Sizes(calls=30, calls_32=64, connects=3, warmup=10, size=64)
FULL = Sizes(calls=3000, calls_32=12800, connects=40, warmup=500, size=64)


# ---------------------------------------------------------------------------------------------------------------
# The Aqueduct side: a typed entrypoint whose message carries its reply oneshot, and a typed service.


@dataclass
class Echo:
    data: bytes
    reply: aqueduct.OneshotSender[bytes]


class EchoService(aqueduct.Service):
    @abc.abstractmethod
    async def echo(self, data: bytes) -> bytes: ...


# ---------------------------------------------------------------------------------------------------------------
# Which aqueduct this is.


def which_aqueduct() -> dict[str, Any]:
    """The imported aqueduct's path, version, compiled status, and whether it is an installed (non-editable) wheel."""
    path = Path(aqueduct.__file__).resolve().parent
    state = aqueduct.compiled()
    site = {Path(p).resolve() for key in ("purelib", "platlib") if (p := sysconfig.get_paths().get(key))}
    in_site = any(path.is_relative_to(s) for s in site)
    editable = False
    try:
        direct = importlib.metadata.distribution("aqueduct-quic").read_text("direct_url.json")
        editable = bool(direct and json.loads(direct).get("dir_info", {}).get("editable"))
    except importlib.metadata.PackageNotFoundError:
        pass
    wheel = in_site and not editable
    why = ("an installed wheel" if wheel else
           "an editable install (the checkout)" if editable else
           f"not in this interpreter's site-packages ({', '.join(str(s) for s in sorted(site))})")
    return {"path": str(path), "version": aqueduct.__version__, "compiled": state.active, "status": state.reason,
            "wheel": wheel, "install": why, "python": sys.executable}


# ---------------------------------------------------------------------------------------------------------------
# Servers (one process per system). Each prints one JSON line (its ports), then answers "stats" on its control
# socket with its counters and its process CPU time, until it is terminated.


async def control(counts: Callable[[], Awaitable[dict[str, Any]]]) -> int:
    """A JSON-lines control socket on loopback: each line in gets the counters and the CPU time out."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.readline():
            out = await counts()
            out["cpu"] = time.process_time()
            writer.write(json.dumps(out).encode() + b"\n")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return int(server.sockets[0].getsockname()[1])


async def serve_aqueduct(certs: Path) -> None:
    counts = {"requests": 0, "new_channels": 0, "service_calls": 0}
    rows: dict[str, dict[str, int]] = {}  # connect row -> connections, of them accepted as 0-RTT
    closing: set[asyncio.Task[None]] = set()

    class EchoImpl(EchoService):
        async def echo(self, data: bytes) -> bytes:
            counts["service_calls"] += 1
            return data

    async def handle(conn: aqueduct.Connection[aqueduct.Receiver[Echo]]) -> None:
        try:
            async for msg in conn.entrypoint:
                counts["requests"] += 1
                if isinstance(msg.reply, aqueduct.OneshotSender) and msg.reply.networked:
                    counts["new_channels"] += 1  # the sending half of a channel the client made for this call
                await msg.reply.send(msg.data)
        except aqueduct.AqueductError:
            pass
        row = conn.header("row")
        if row is not None:  # a connect row's connection: count it once it ended (its handshake is over by then)
            await conn.wait_closed()
            seen = rows.setdefault(row.decode(), {"connections": 0, "zero_rtt": 0})
            seen["connections"] += 1
            seen["zero_rtt"] += conn.zero_rtt

    async def stats() -> dict[str, Any]:
        if closing:  # the connect rows' connections the client closed: wait (bounded) until each is counted
            await asyncio.wait(list(closing), timeout=CALL_TIMEOUT)
        return {**counts, "rows": {k: dict(v) for k, v in rows.items()}}

    cert, key = certs / "cert.pem", certs / "key.pem"
    async with aqueduct.serve("127.0.0.1", 0, cert=cert, key=key, entrypoint=Echo, single_use_tickets=True) as srv, \
            aqueduct.serve("127.0.0.1", 0, cert=cert, key=key, service=EchoImpl()) as svc:
        port = await control(stats)
        print(json.dumps({"echo": srv.address[1], "service": svc.address[1], "control": port,
                          "aqueduct": which_aqueduct()}), flush=True)
        async for conn in srv:
            task = asyncio.ensure_future(handle(conn))
            if conn.header("row") is not None:
                closing.add(task)
                task.add_done_callback(closing.discard)


async def serve_grpc(certs: Path) -> None:
    import grpc

    counts = {"calls": 0, "tls_calls": 0}
    peers: set[str] = set()

    async def call(request: bytes, context: Any) -> bytes:
        counts["calls"] += 1
        peers.add(context.peer())
        if context.auth_context().get("transport_security_type") == [b"ssl"]:
            counts["tls_calls"] += 1
        return request

    async def stats() -> dict[str, Any]:
        return {**counts, "connections": len(peers)}

    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "independent.Echo", {"Call": grpc.unary_unary_rpc_method_handler(call)}),))
    creds = grpc.ssl_server_credentials([((certs / "key.pem").read_bytes(), (certs / "cert.pem").read_bytes())])
    port = server.add_secure_port("127.0.0.1:0", creds)
    await server.start()
    print(json.dumps({"echo": port, "control": await control(stats), "grpcio": grpc.__version__}), flush=True)
    await server.wait_for_termination()


async def serve_aioquic(certs: Path) -> None:
    from aioquic.asyncio.protocol import QuicConnectionProtocol
    from aioquic.asyncio.server import serve
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.events import HandshakeCompleted, QuicEvent, StreamDataReceived
    from aioquic.tls import SessionTicket

    counts = {"connections": 0, "zero_rtt": 0}
    tickets: dict[bytes, SessionTicket] = {}

    class EchoServer(QuicConnectionProtocol):
        def quic_event_received(self, event: QuicEvent) -> None:
            if isinstance(event, HandshakeCompleted):
                counts["connections"] += 1
                counts["zero_rtt"] += event.early_data_accepted
            elif isinstance(event, StreamDataReceived):
                self._quic.send_stream_data(event.stream_id, event.data, end_stream=event.end_stream)
                self.transmit()

    async def stats() -> dict[str, Any]:
        return dict(counts)

    config = QuicConfiguration(is_client=False, alpn_protocols=[ALPN])
    config.load_cert_chain(certs / "cert.pem", certs / "key.pem")
    server = await serve("127.0.0.1", 0, configuration=config, create_protocol=EchoServer,
                         session_ticket_fetcher=tickets.pop,  # (single use, like the Aqueduct server's)
                         session_ticket_handler=lambda t: tickets.__setitem__(t.ticket, t))
    transport = server._transport  # (aioquic's QuicServer says its address nowhere else)
    assert transport is not None
    port = transport.get_extra_info("sockname")[1]
    import aioquic

    print(json.dumps({"echo": port, "control": await control(stats), "aioquic": aioquic.__version__}), flush=True)
    await asyncio.Future()  # (until terminated)


# ---------------------------------------------------------------------------------------------------------------
# Clients (one process per system): each line on stdin runs one round of the system's rows.


class Far:
    """The server's control socket: its counters and CPU time."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def read(self) -> dict[str, Any]:
        self.writer.write(b"stats\n")
        async with asyncio.timeout(CALL_TIMEOUT * 2):
            return dict(json.loads(await self.reader.readline()))


async def next_round() -> bool:
    """Wait for the orchestrator's next line (a round; none: the end) without blocking the event loop.

    The other systems' rows run meanwhile, and can take longer than a connection's idle timeout (30 s) on a slow
    or loaded machine. A blocking `sys.stdin.readline()` froze this client's loop for all that time: its
    connections sent no keep-alive, the server closed them at their idle deadline, and the next round's first
    request failed (Timeout until decision QUIC-34, ConnectionLost since). Read in a thread, the loop runs on."""
    return bool(await asyncio.to_thread(sys.stdin.readline))


async def timed_row(far: Far, name: str, work: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """Run one row between two readings of the server; the row's seconds, CPU (both processes) and far counts."""
    before = await far.read()
    cpu, t0 = time.process_time(), time.perf_counter()
    row = await work()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu
    after = await far.read()
    far_delta = {k: after[k] - before[k] for k in after if isinstance(after[k], int) and k in before}
    if "rows" in after:
        far_delta["row"] = _row_delta(after["rows"].get(name, {}), before["rows"].get(name, {}))
    return {"row": name, "seconds": seconds, "cpu_client": cpu, "cpu_server": after["cpu"] - before["cpu"],
            "far": far_delta, "far_after": after, **row}


def _row_delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in ("connections", "zero_rtt")}


async def sequential(n: int, call: Callable[[], Awaitable[bytes]], payload: bytes) -> dict[str, Any]:
    """`n` calls one after the other, each one's latency."""
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        if await call() != payload:
            raise RuntimeError("the echo differs from the request")
        lat.append(time.perf_counter() - t0)
    return {"calls": n, "p50": statistics.median(lat)}


async def concurrent(n: int, callers: int, call: Callable[[], Awaitable[bytes]]) -> dict[str, Any]:
    """`n` calls made by `callers` callers at once (n // callers each)."""
    each = n // callers

    async def caller() -> None:
        for _ in range(each):
            await call()

    await asyncio.gather(*(caller() for _ in range(callers)))
    return {"calls": each * callers}


async def client_aqueduct(info: dict[str, Any], certs: Path, sizes: Sizes) -> None:
    ca = certs / "ca.pem"
    url = f"aqueduct://127.0.0.1:{info['echo']}"
    payload = b"x" * sizes.size
    far = Far(info["control"])
    await far.open()

    class Tickets(aqueduct.MemoryTicketStore):
        """A ticket store that says when a connection's new ticket arrived (0-RTT tickets here are single use)."""

        def __init__(self) -> None:
            super().__init__()
            self.arrived = asyncio.Event()

        def put(self, server: str, ticket: Any) -> None:
            super().put(server, ticket)
            self.arrived.set()

    tickets = Tickets()

    async with aqueduct.connect(url, ca=ca, entrypoint=Echo) as conn, \
            aqueduct.connect(f"aqueduct://127.0.0.1:{info['service']}", ca=ca, service=EchoService) as svc:

        def request() -> Awaitable[bytes]:
            return aqueduct.request(conn.entrypoint, lambda reply: Echo(payload, reply), timeout=CALL_TIMEOUT)

        async def service_call() -> bytes:
            with aqueduct.call_options(timeout=CALL_TIMEOUT):
                return await svc.service.echo(payload)

        async def connects(zero_rtt: bool) -> dict[str, Any]:
            row = "connect 0-RTT" if zero_rtt else "connect 1-RTT"
            took = []
            for _ in range(sizes.connects):
                tickets.arrived.clear()
                t0 = time.perf_counter()
                async with asyncio.timeout(CALL_TIMEOUT):
                    new = await aqueduct.connect(url, ca=ca, entrypoint=Echo, headers={"row": row},
                                                 session_ticket_store=tickets if zero_rtt else None)
                    got = await aqueduct.request(new.entrypoint, lambda reply: Echo(payload, reply))
                    took.append(time.perf_counter() - t0)
                    if got != payload:
                        raise RuntimeError("the echo differs from the request")
                    if zero_rtt:
                        await tickets.arrived.wait()  # (untimed: the next connect's ticket)
                await new.close()
            return {"connects": len(took), "first_reply": statistics.median(took)}

        for _ in range(sizes.warmup):
            await request()
            await service_call()
        async with asyncio.timeout(CALL_TIMEOUT):  # a first ticket for the 0-RTT row
            async with aqueduct.connect(url, ca=ca, entrypoint=Echo, headers={"row": "prime"},
                                        session_ticket_store=tickets) as prime:
                await aqueduct.request(prime.entrypoint, lambda reply: Echo(payload, reply))
                await tickets.arrived.wait()

        while await next_round():
            rows = [
                await timed_row(far, "request 1", lambda: sequential(sizes.calls, request, payload)),
                await timed_row(far, "request 32", lambda: concurrent(sizes.calls_32, 32, request)),
                await timed_row(far, "service 1", lambda: sequential(sizes.calls, service_call, payload)),
                await timed_row(far, "connect 1-RTT", lambda: connects(False)),
                await timed_row(far, "connect 0-RTT", lambda: connects(True)),
            ]
            print(json.dumps(rows), flush=True)


async def client_grpc(info: dict[str, Any], certs: Path, sizes: Sizes) -> None:
    import grpc

    payload = b"x" * sizes.size
    far = Far(info["control"])
    await far.open()
    creds = grpc.ssl_channel_credentials(root_certificates=(certs / "ca.pem").read_bytes())
    async with grpc.aio.secure_channel(f"ipv4:127.0.0.1:{info['echo']}", creds,
                                       options=[("grpc.ssl_target_name_override", "localhost")]) as channel:
        method = channel.unary_unary(GRPC_METHOD)  # no serializers: the request and the reply are bytes

        async def call() -> bytes:
            return bytes(await method(payload, timeout=CALL_TIMEOUT))

        for _ in range(sizes.warmup):
            await call()
        while await next_round():
            rows = [
                await timed_row(far, "request 1", lambda: sequential(sizes.calls, call, payload)),
                await timed_row(far, "request 32", lambda: concurrent(sizes.calls_32, 32, call)),
            ]
            print(json.dumps(rows), flush=True)


async def client_aioquic(info: dict[str, Any], certs: Path, sizes: Sizes) -> None:
    from aioquic.asyncio.client import connect
    from aioquic.asyncio.protocol import QuicConnectionProtocol
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.events import QuicEvent, StreamDataReceived
    from aioquic.tls import SessionTicket

    payload = b"x" * sizes.size
    far = Far(info["control"])
    await far.open()

    class EchoClient(QuicConnectionProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.replies: dict[int, tuple[asyncio.Future[bytes], bytearray]] = {}

        async def echo(self, data: bytes) -> bytes:
            sid = self._quic.get_next_available_stream_id()
            self.replies[sid] = (asyncio.get_running_loop().create_future(), bytearray())
            self._quic.send_stream_data(sid, data, end_stream=True)
            self.transmit()
            return await self.replies[sid][0]

        def quic_event_received(self, event: QuicEvent) -> None:
            if isinstance(event, StreamDataReceived) and event.stream_id in self.replies:
                fut, buf = self.replies[event.stream_id]
                buf += event.data
                if event.end_stream:
                    fut.set_result(bytes(buf))

    ticket: list[SessionTicket] = []
    arrived = asyncio.Event()

    def keep(t: SessionTicket) -> None:
        ticket[:] = [t]
        arrived.set()

    async def once(zero_rtt: bool) -> float:
        config = QuicConfiguration(is_client=True, alpn_protocols=[ALPN], server_name="localhost")
        config.load_verify_locations(str(certs / "ca.pem"))
        if zero_rtt:
            config.session_ticket = ticket.pop()
        arrived.clear()
        async with asyncio.timeout(CALL_TIMEOUT):
            t0 = time.perf_counter()
            async with connect("127.0.0.1", info["echo"], configuration=config, create_protocol=EchoClient,
                               session_ticket_handler=keep, wait_connected=not zero_rtt) as proto:
                assert isinstance(proto, EchoClient)
                if await proto.echo(payload) != payload:
                    raise RuntimeError("the echo differs from the request")
                took = time.perf_counter() - t0
                await arrived.wait()  # (untimed: the next connect's ticket)
        return took

    async def connects(zero_rtt: bool) -> dict[str, Any]:
        took = [await once(zero_rtt) for _ in range(sizes.connects)]
        return {"connects": len(took), "first_reply": statistics.median(took)}

    await once(False)  # a first ticket
    while await next_round():
        rows = [
            await timed_row(far, "connect 1-RTT", lambda: connects(False)),
            await timed_row(far, "connect 0-RTT", lambda: connects(True)),
        ]
        print(json.dumps(rows), flush=True)


SERVERS = {"aqueduct": serve_aqueduct, "grpc": serve_grpc, "aioquic": serve_aioquic}
CLIENTS = {"aqueduct": client_aqueduct, "grpc": client_grpc, "aioquic": client_aioquic}


# ---------------------------------------------------------------------------------------------------------------
# The far-side proof of each row, and the targets.


def proof(system: str, row: dict[str, Any]) -> str | None:
    """What is wrong with `row` by the server's counts (None: the server saw what the row says it did)."""
    far, name = row["far"], row["row"]
    if system == "aqueduct" and name.startswith(("request", "service")):
        want = {"requests": row["calls"], "new_channels": row["calls"], "service_calls": 0}
        if name.startswith("service"):
            want = {"requests": 0, "new_channels": 0, "service_calls": row["calls"]}
    elif system == "grpc":
        want = {"calls": row["calls"], "tls_calls": row["calls"]}
        if row["far_after"]["connections"] != 1:
            return f"{row['far_after']['connections']} client connections, not the one channel's"
    elif name.startswith("connect"):
        zero = row["connects"] if "0-RTT" in name else 0
        got = far["row"] if system == "aqueduct" else far
        want, far = {"connections": row["connects"], "zero_rtt": zero}, got
    else:
        return f"no proof for {system} {name}"
    wrong = {k: (far.get(k), v) for k, v in want.items() if far.get(k) != v}
    return None if not wrong else ", ".join(f"{k}: server {g}, row {w}" for k, (g, w) in wrong.items())


@dataclass(frozen=True)
class Target:
    name: str
    unit: str
    goal: str
    ours: Callable[[dict[str, dict[str, Any]]], float]
    theirs: Callable[[dict[str, dict[str, Any]]], float]
    higher_is_better: bool
    bound: float


def _rate(system: str, row: str) -> Callable[[dict[str, dict[str, Any]]], float]:
    return lambda r: float(r[system][row]["calls"] / r[system][row]["seconds"])


def _cpu(system: str, row: str) -> Callable[[dict[str, dict[str, Any]]], float]:
    return lambda r: 1e6 * (r[system][row]["cpu_client"] + r[system][row]["cpu_server"]) / r[system][row]["calls"]


def _get(system: str, row: str, key: str, scale: float) -> Callable[[dict[str, dict[str, Any]]], float]:
    return lambda r: scale * float(r[system][row][key])


TARGETS = (
    Target("calls/s at 1 in flight, vs grpcio aio TLS", "calls/s", ">= 1.0x",
           _rate("aqueduct", "request 1"), _rate("grpc", "request 1"), True, 1.0),
    Target("p50 latency at 1 in flight, vs grpcio aio TLS", "us", "<= 1.0x",
           _get("aqueduct", "request 1", "p50", 1e6), _get("grpc", "request 1", "p50", 1e6), False, 1.0),
    Target("calls/s at 32 in flight, vs grpcio aio TLS", "calls/s", ">= 3.0x",
           _rate("aqueduct", "request 32"), _rate("grpc", "request 32"), True, 3.0),
    Target("CPU per call (both processes): typed service vs request", "us", "<= 1.1x",
           _cpu("aqueduct", "service 1"), _cpu("aqueduct", "request 1"), False, 1.1),
    Target("connect to first reply, 1-RTT, vs raw aioquic", "ms", "<= 1.0x",
           _get("aqueduct", "connect 1-RTT", "first_reply", 1e3), _get("aioquic", "connect 1-RTT", "first_reply", 1e3),
           False, 1.0),
    Target("connect to first reply, 0-RTT, vs raw aioquic", "ms", "<= 1.0x",
           _get("aqueduct", "connect 0-RTT", "first_reply", 1e3), _get("aioquic", "connect 0-RTT", "first_reply", 1e3),
           False, 1.0),
)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):,.2f} [{min(values):,.2f}-{max(values):,.2f}]"


def report(rounds: list[dict[str, dict[str, Any]]]) -> tuple[list[str], list[dict[str, Any]]]:
    lines = [f"{'target':<58} {'aqueduct':>12} {'peer':>12}  {'ratio median [min-max]':<24} {'goal':<9} verdict"]
    summary = []
    for t in TARGETS:
        ours = [t.ours(r) for r in rounds]
        theirs = [t.theirs(r) for r in rounds]
        ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
        med = statistics.median(ratios)
        met = med >= t.bound if t.higher_is_better else med <= t.bound
        lines.append(f"{t.name:<58} {statistics.median(ours):>12,.1f} {statistics.median(theirs):>12,.1f}  "
                     f"{spread(ratios) + 'x':<24} {t.goal:<9} {'met' if met else 'NOT met'}")
        summary.append({"target": t.name, "unit": t.unit, "ours": ours, "theirs": theirs, "ratios": ratios,
                        "goal": t.goal, "met": met})
    lines.append("(aqueduct and peer columns: medians over rounds, in each target's unit: calls/s, us or ms)")
    cpu_rows = (("aqueduct request", "aqueduct", "request 1"), ("typed service", "aqueduct", "service 1"),
                ("grpcio aio TLS", "grpc", "request 1"))
    lines.append("CPU per call at 1 in flight, client + server (us, medians over rounds): " + ", ".join(
        f"{label} {_median(rounds, system, row, 'cpu_client'):,.0f} + {_median(rounds, system, row, 'cpu_server'):,.0f}"
        for label, system, row in cpu_rows))
    return lines, summary


def _median(rounds: list[dict[str, dict[str, Any]]], system: str, row: str, key: str) -> float:
    return float(statistics.median(1e6 * r[system][row][key] / r[system][row]["calls"] for r in rounds))


# ---------------------------------------------------------------------------------------------------------------
# The orchestrator.


class Child:
    """A process of this script, talking JSON lines on its stdout."""

    def __init__(self, *args: str) -> None:
        self.name = " ".join(args[:2])
        self.proc = subprocess.Popen([sys.executable, __file__, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def line(self) -> Any:
        assert self.proc.stdout is not None
        text = self.proc.stdout.readline()
        if not text:
            raise RuntimeError(f"{self.name} ended (status {self.proc.wait()}); its error is above")
        return json.loads(text)

    def ask(self) -> Any:
        assert self.proc.stdin is not None
        self.proc.stdin.write("round\n")
        self.proc.stdin.flush()
        return self.line()

    def stop(self) -> None:
        """A client ends its rounds at the end of its stdin (it closes its connections); a server is terminated."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        if self.name.startswith("client"):
            try:
                self.proc.wait(timeout=CALL_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def run(args: argparse.Namespace) -> int:
    sizes = QUICK if args.quick else FULL
    rounds = args.rounds or (2 if args.quick else 5)
    me = which_aqueduct()
    print(f"aqueduct {me['version']} from {me['path']}")
    print(f"  {me['install']}; {me['status']}")
    wrong_build = [*([] if me["wheel"] else ["NOT AN INSTALLED WHEEL: not what a user installs"]),
                   *([] if me["compiled"] else ["PURE PYTHON: the compiled wire and engine are not in use"])]
    for banner in wrong_build:
        print(f"  !!! {banner} !!!")
    if wrong_build and args.require_wheel:
        print("--require-wheel: refusing to run (install a compiled wheel into a fresh venv and run this file with "
              "that venv's python; README.md)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="independent-", dir=args.workdir) as tmp:
        certs = Path(tmp)
        # (-P: never the current directory first, which in a checkout's root would be the checkout's aqueduct)
        subprocess.run([sys.executable, "-P", "-m", "aqueduct", "cert", "--dir", str(certs)], check=True,
                       stdout=subprocess.DEVNULL)
        children: list[Child] = []
        try:
            servers = {}
            for system in SYSTEMS:
                children.append(Child("serve", system, "--certs", str(certs)))
                servers[system] = children[-1].line()
            if servers["aqueduct"]["aqueduct"] != me:
                print(f"the server process imported another aqueduct: {servers['aqueduct']['aqueduct']}",
                      file=sys.stderr)
                return 2
            print(f"  grpcio {servers['grpc']['grpcio']}, aioquic {servers['aioquic']['aioquic']}, "
                  f"{rounds} rounds, sizes {sizes}")
            clients = {}
            for system in SYSTEMS:
                children.append(Child("client", system, "--certs", str(certs), "--info", json.dumps(servers[system]),
                                      *(["--quick"] if args.quick else [])))
                clients[system] = children[-1]
            results: list[dict[str, dict[str, Any]]] = []
            for i in range(rounds):
                order = SYSTEMS if i % 2 == 0 else SYSTEMS[::-1]
                results.append({system: {row["row"]: row for row in clients[system].ask()} for system in order})
        finally:
            for child in children:
                child.stop()
    wrong = []
    for i, result in enumerate(results):
        for system, rows in result.items():
            for row in rows.values():
                row["proof"] = proof(system, row)
                if row["proof"] is not None:
                    wrong.append(f"round {i + 1} {system} {row['row']}: {row['proof']}")
    print("far side: " + ("every row's server counted what the row says it did (calls, new channels, service calls, "
                          "TLS calls, one grpc connection, new connections, 0-RTT accepted)" if not wrong else
                          "MISMATCH"))
    for line in wrong:
        print(f"  !!! {line}")
    lines, summary = report(results)
    if args.quick:
        print("--quick: a few calls per row, to prove the rows; the figures below are not a measurement")
    print("\n".join(lines))
    if args.json is not None:
        Path(args.json).write_text(json.dumps({"aqueduct": me, "servers": servers, "sizes": sizes.__dict__,
                                               "rounds": results, "targets": summary, "wrong": wrong}, indent=1))
    return 1 if wrong else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("serve").add_argument("system", choices=SYSTEMS)
    client = sub.add_parser("client")
    client.add_argument("system", choices=SYSTEMS)
    client.add_argument("--info", required=True)
    for p in (sub.choices["serve"], client):
        p.add_argument("--certs", type=Path, required=True)
    client.add_argument("--quick", action="store_true")
    parser.add_argument("--quick", action="store_true", help="a few calls per row: for a test, not a measurement")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 5; 2 with --quick)")
    parser.add_argument("--require-wheel", action="store_true",
                        help="refuse to run unless aqueduct is an installed, compiled wheel")
    parser.add_argument("--json", help="write every row of every round, with its far-side counts, here")
    parser.add_argument("--workdir", help="where the temporary certificates go (default: the system's temp dir)")
    args = parser.parse_args()
    if args.command == "serve":
        asyncio.run(SERVERS[args.system](args.certs))
        return 0
    if args.command == "client":
        asyncio.run(CLIENTS[args.system](json.loads(args.info), args.certs, QUICK if args.quick else FULL))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

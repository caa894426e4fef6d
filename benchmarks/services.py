"""The service rows: calls per second and latency of a service call, beside `aqueduct.request` with a fresh
oneshot and grpcio's aio unary call (when grpcio is installed: the `bench` extra), in one run.

Theory of operation. A peer process (`python -m benchmarks.services --serve DIR`) serves three things
on loopback and prints their ports: a `BenchCalc` service (`serve(service=)`), an entrypoint of typed
`Add` requests answered on their reply oneshot (what a service call is built from, hand-written), and a
grpc.aio server with one generic unary method on raw bytes (no protobuf: the figure is the transport and
dispatch, not a codec). This process calls each for `window` seconds with 1 and with 32 calls in flight
and records calls/s and the p50/p99 of each call's latency, alternating the kinds each round, and the CPU
time per call of each side (this process's `time.process_time()`; the peer's, asked for on its stdin before
and after the window): on a loaded machine the wall-clock rates are noise, the CPU per call much less so.
`--no-grpc` leaves grpcio out (its server threads, in the peer process, count in the peer's CPU time).
"""

from __future__ import annotations

import abc
import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from aqueduct import OneshotSender
from aqueduct.bench.clients import percentile
from aqueduct.bench.tally import Tally
from aqueduct.services import Service, connect, serve

from . import command

FLIGHTS = (1, 32)
KINDS = ("service call", "aqueduct.request fresh oneshot", "grpcio aio unary")


class BenchCalc(Service):
    @abc.abstractmethod
    async def add(self, a: int, b: int) -> int: ...


class Calc(BenchCalc):
    def __init__(self, tally: Tally | None = None) -> None:
        self.tally = tally or Tally()

    async def add(self, a: int, b: int) -> int:
        self.tally.calls += 1
        return a + b


class Add(msgspec.Struct):
    a: int
    b: int
    reply: OneshotSender[int]


def grpc_available() -> bool:
    """Whether grpcio is installed."""
    import importlib.util

    return importlib.util.find_spec("grpc") is not None


# ---- the serving peer ----
@dataclass
class Serving:
    """The three servers of the serving peer: their ports, what each saw (by kind: KINDS), and how to stop them."""

    ports: dict[str, int]
    tallies: dict[str, Tally]
    stop: Callable[[], Awaitable[None]]


async def start(certs: Path, with_grpc: bool = True) -> Serving:
    """The service, the typed entrypoint answering `Add` on its oneshot, and (if installed) the grpc.aio server,
    each on a free loopback port, each counting what it answered (bench/tally.py)."""
    cert, key = certs / "cert.pem", certs / "key.pem"
    tallies = {kind: Tally() for kind in KINDS}
    ports: dict[str, int] = {}
    stack = contextlib.AsyncExitStack()
    svc = await stack.enter_async_context(serve("127.0.0.1", 0, cert=cert, key=key,
                                                service=Calc(tallies["service call"])))
    plain = await stack.enter_async_context(serve("127.0.0.1", 0, cert=cert, key=key, entrypoint=Add))
    ports["service"], ports["request"] = svc.address[1], plain.address[1]
    counted = tallies["aqueduct.request fresh oneshot"]

    async def answer(conn: Any) -> None:
        counted.connected(conn)
        async for req in conn.entrypoint:
            counted.calls += 1
            counted.channels += isinstance(req.reply, OneshotSender)  # the call's own reply channel
            await req.reply.send(req.a + req.b)

    answering: set[asyncio.Future[None]] = set()

    async def accept() -> None:
        async for conn in plain:
            answering.add(asyncio.ensure_future(answer(conn)))

    acceptor = asyncio.ensure_future(accept())
    grpc_server = None
    if with_grpc and grpc_available():
        import grpc

        unary_tally = tallies["grpcio aio unary"]

        async def unary(request: bytes, context: Any) -> bytes:
            unary_tally.calls += 1
            return request

        handler = grpc.method_handlers_generic_handler(
            "bench.Calc", {"Add": grpc.unary_unary_rpc_method_handler(unary)})
        grpc_server = grpc.aio.server()
        grpc_server.add_generic_rpc_handlers((handler,))
        ports["grpc"] = grpc_server.add_insecure_port("127.0.0.1:0")
        await grpc_server.start()

    async def stop() -> None:
        acceptor.cancel()
        for task in answering:
            task.cancel()
        if grpc_server is not None:
            await grpc_server.stop(None)
        await stack.aclose()

    return Serving(ports, tallies, stop)


async def _serve(certs: Path, with_grpc: bool = True) -> None:
    serving = await start(certs, with_grpc)
    print(json.dumps(serving.ports), flush=True)
    while await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline):  # (each line: "CPU?")
        print(time.process_time(), flush=True)
    await serving.stop()


# ---- measuring ----
async def _drive(call: Callable[[], Awaitable[Any]], flight: int, window: float,
                 cpu: Callable[[], tuple[float, float]]) -> tuple[float, list[float], tuple[float, float]]:
    """Calls/s, each call's latency and the CPU seconds per call (this process, the peer's) with `flight` calls
    in flight for `window` seconds (each caller makes one call at least)."""
    latencies: list[float] = []
    for _ in range(50):  # warm up
        await call()
    client0, server0 = cpu()
    stop = time.perf_counter() + window

    async def worker() -> None:
        while True:  # (one call at least: a window over before the callers start still times `flight` calls)
            t0 = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - t0)
            if time.perf_counter() >= stop:
                return

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(flight)))
    rate = len(latencies) / (time.perf_counter() - started)
    client1, server1 = cpu()
    n = max(len(latencies), 1)
    return rate, latencies, ((client1 - client0) / n, (server1 - server0) / n)


async def _callers(ports: dict[str, int], ca: Path) -> tuple[dict[str, Callable[[], Awaitable[Any]]], list[Any]]:
    from aqueduct import request

    svc = await connect(f"aqueduct://127.0.0.1:{ports['service']}", ca=ca, service=BenchCalc,
                        max_concurrent_calls=64)
    plain = await connect(f"aqueduct://127.0.0.1:{ports['request']}", ca=ca, entrypoint=Add)
    calc, target = svc.service, plain.entrypoint
    callers: dict[str, Callable[[], Awaitable[Any]]] = {
        "service call": lambda: calc.add(1, 2),
        "aqueduct.request fresh oneshot": lambda: request(target, lambda r: Add(1, 2, r)),
    }
    closers: list[Any] = [svc.close, plain.close]
    if "grpc" in ports:
        import grpc

        channel = grpc.aio.insecure_channel(f"127.0.0.1:{ports['grpc']}")
        stub = channel.unary_unary("/bench.Calc/Add")
        callers["grpcio aio unary"] = lambda: stub(b"\x01\x02")
        closers.append(channel.close)
    return callers, closers


async def measure(certs_dir: Path, window: float, rounds: int,
                  progress: Callable[[str], None] = lambda _: None,
                  with_grpc: bool = True) -> dict[str, dict[str, list[float]]]:
    """Per row (`<kind> (<n> in flight)`): `calls_s`, `p50_us`, `p99_us`, and the CPU time per call of this
    process and of the serving peer, `client_cpu_us` and `server_cpu_us`; one value per round."""
    cmd = command("benchmarks.services", "--serve", str(certs_dir), *([] if with_grpc else ["--no-grpc"]))
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    out: dict[str, dict[str, list[float]]] = {}
    try:
        assert proc.stdout is not None and proc.stdin is not None
        ports = json.loads(proc.stdout.readline())
        stdin, stdout = proc.stdin, proc.stdout

        def cpu() -> tuple[float, float]:
            stdin.write("CPU?\n")
            stdin.flush()
            return time.process_time(), float(stdout.readline())

        callers, closers = await _callers(ports, certs_dir / "ca.pem")
        try:
            kinds = list(callers)
            for rnd in range(rounds):
                shift = rnd % len(kinds)
                for kind in kinds[shift:] + kinds[:shift]:
                    for flight in FLIGHTS:
                        progress(f"services round {rnd + 1}/{rounds}: {kind}, {flight} in flight")
                        rate, lat, (client_cpu, server_cpu) = await _drive(callers[kind], flight, window, cpu)
                        row = out.setdefault(f"{kind} ({flight} in flight)", {})
                        row.setdefault("calls_s", []).append(rate)
                        row.setdefault("client_cpu_us", []).append(client_cpu * 1e6)
                        row.setdefault("server_cpu_us", []).append(server_cpu * 1e6)
                        row.setdefault("p50_us", []).append(percentile(lat, 0.5) * 1e6)
                        row.setdefault("p99_us", []).append(percentile(lat, 0.99) * 1e6)
        finally:
            for close in closers:
                await close()
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=30)
    return out


def main() -> None:
    """`--serve DIR`: the serving peer. Otherwise measure (fresh certificates) and print the rows as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--serve", metavar="DIR")
    parser.add_argument("--window", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-grpc", action="store_true", help="leave grpcio out (its threads count in the peer's CPU)")
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(Path(args.serve), not args.no_grpc))
        return
    import tempfile

    from aqueduct.quic.certs import make_dev_certs

    with tempfile.TemporaryDirectory() as tmp:
        make_dev_certs(tmp)
        rows = asyncio.run(measure(Path(tmp), args.window, args.rounds, lambda s: print(s, file=sys.stderr),
                                   not args.no_grpc))
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

"""Measure one peer row once, in a process of its own (so its CPU is the client's side alone).

    python -m benchmarks.peers.measure --row NAME --server JSON --ca CA --window S [--setups N]
        [--idle N] [--uvloop]

`--server` is the JSON line the row's server process printed (serve.py). Prints one JSON object
{workload: value} for the row's workloads (peers/__init__.py):

- request/reply at 1 and 32 in flight: `inflight` concurrent callers (the "pair" variant pipelines on one
  channel pair instead) for `window` seconds after a short warm-up; calls/s, p50 and p99 of each call's
  own time, and CPU per call: this process's CPU time on the client side, the server processes' (every
  thread's run time from /proc/PID/task/*/schedstat) on the server side, each divided by the calls;
- 64 B one way: after a warm-up, messages for `window` seconds; rate = the server's count / time to it;
- connect to first reply: the median of `setups` new connections (0-RTT: with a ticket);
- memory per idle connection (with `--idle N`): the server's RSS growth while this process holds N more
  connections, each used once, divided by N.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aqueduct.bench.clients import percentile

from . import BY_NAME, KINDS, PeerRow

BODY = b"x" * 64
WARMUP = 0.1
IDLE_CONCURRENCY = 16


def server_cpu(pids: list[int]) -> float:
    """Seconds of CPU every thread of `pids` has run so far (threads that ended are not counted)."""
    total = 0
    for pid in pids:
        base = f"/proc/{pid}/task"
        for tid in os.listdir(base):
            try:
                with open(f"{base}/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except OSError:
                continue  # the thread ended
    return total / 1e9


def rss(pid: int) -> int:
    """Resident set size of `pid` in bytes."""
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def concurrent_calls(call: Callable[[bytes], Awaitable[bytes]], body: bytes, inflight: int,
                           window: float) -> list[float]:
    """Seconds per call of `inflight` callers each calling in turn until `window` passes."""
    out: list[float] = []
    deadline = time.perf_counter() + window

    async def caller() -> None:
        while True:
            t0 = time.perf_counter()
            if await call(body) != body:
                raise RuntimeError("a reply differs from its request")
            t1 = time.perf_counter()
            out.append(t1 - t0)
            if t1 >= deadline:
                return

    await asyncio.gather(*(caller() for _ in range(inflight)))
    return out


async def _calls(client: Any, row: PeerRow, inflight: int, window: float) -> list[float]:
    """Seconds per call of the row's request/reply: the "pair" row pipelines on one pre-opened channel pair
    (`client.calls`); every other row makes `inflight` concurrent `client.call`s (for "aqueduct request", a fresh
    oneshot each). (Choosing by `hasattr(client, "calls")` ran the pair for "aqueduct request" too: issue 34.)"""
    if row.variant == "pair":
        return await client.calls(BODY, inflight, window)  # type: ignore[no-any-return]
    return await concurrent_calls(client.call, BODY, inflight, window)


async def request_reply(client: Any, row: PeerRow, inflight: int, window: float,
                        pids: list[int]) -> dict[str, float]:
    """rr{n}, rr{n}_p50, rr{n}_p99 (us), rr{n}_cpu_server and rr{n}_cpu_client (us per call)."""
    await _calls(client, row, inflight, min(WARMUP, window))
    cpu, server = time.process_time(), server_cpu(pids)
    start = time.perf_counter()
    lat = await _calls(client, row, inflight, window)
    took = time.perf_counter() - start
    cpu, server = time.process_time() - cpu, server_cpu(pids) - server
    n = len(lat)
    key = f"rr{inflight}"
    return {key: n / took, f"{key}_p50": percentile(lat, 0.5) * 1e6, f"{key}_p99": percentile(lat, 0.99) * 1e6,
            f"{key}_cpu_server": server / n * 1e6, f"{key}_cpu_client": cpu / n * 1e6}


async def idle_memory(client: Any, count: int, memory_pid: int) -> float:
    """Bytes of the server's RSS per idle connection, with `count` more held (opened a few at a time)."""
    before = rss(memory_pid)
    closes: list[Callable[[], Awaitable[None]]] = []
    left = count

    async def opener() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            closes.append(await client.open_idle())

    await asyncio.gather(*(opener() for _ in range(min(IDLE_CONCURRENCY, count))))
    grown = rss(memory_pid) - before
    for i in range(0, len(closes), 64):
        await asyncio.gather(*(c() for c in closes[i:i + 64]), return_exceptions=True)
    return grown / count


async def measure(row: PeerRow, server: dict[str, Any], ca: Path, window: float, setups: int,
                  idle: int) -> dict[str, float]:
    """Every workload of `row` once against the running server described by `server`."""
    module = importlib.import_module(f"benchmarks.peers.{KINDS[row.kind].module}")
    client = module.Client(server["info"], ca, row.variant)
    out: dict[str, float] = {}
    await client.open()
    try:
        if "rr1" in row.workloads:
            out.update(await request_reply(client, row, 1, window, server["pids"]))
        if "rr32" in row.workloads:
            out.update(await request_reply(client, row, 32, window, server["pids"]))
        if "msg64" in row.workloads:
            await client.oneway(64, min(WARMUP, window), 10_000_000)
            r = await client.oneway(64, window, 10_000_000)
            out["msg64"] = r.messages / r.seconds
        for key, zero_rtt in (("setup_1rtt", False), ("setup_0rtt", True)):
            if key in row.workloads:
                took = [await client.connect_first_reply(zero_rtt) for _ in range(setups)]
                out[key] = statistics.median(took) * 1000
        if "conn_mem" in row.workloads and idle > 0:
            out["conn_mem"] = await idle_memory(client, idle, server["memory_pid"])
    finally:
        await client.close()
    return out


def main() -> None:
    """Command-line entry (see the module docstring)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--row", choices=list(BY_NAME), required=True)
    ap.add_argument("--server", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--window", type=float, required=True)
    ap.add_argument("--setups", type=int, default=3)
    ap.add_argument("--idle", type=int, default=0)
    ap.add_argument("--uvloop", action="store_true")
    args = ap.parse_args()
    if args.uvloop:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    print(json.dumps(asyncio.run(measure(BY_NAME[args.row], json.loads(args.server), Path(args.ca), args.window,
                                         args.setups, args.idle))))


if __name__ == "__main__":
    main()

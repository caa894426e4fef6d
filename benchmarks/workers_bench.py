"""`aqueduct serve --workers N`: handshakes/s and messages/s with 1 and 2 workers, and server CPU per unit.

    .venv/bin/python benchmarks/workers_bench.py [--workers 1 2] [--window 3] [--loaders 2] [--rounds 2]

For each worker count (alternating, `--rounds` times) it starts `aqueduct serve --echo --workers N` and
`--loaders` load processes (this script with --load; all from 127.0.0.1, so the server allows 100,000
connections per address), which
- handshakes: 16 concurrent connect-then-close loops each for --window seconds;
- messages: 4 connections each, one channel each served by the echo rule (a message without attachments
  is only counted), 64 B messages for --window seconds, then one message with a reply sender: its answer
  comes after all before it were taken.
Prints the total rate and the CPU time of all server processes (from /proc) per handshake and per message.
On a 2-core machine the load processes share the cores with the server, so the rates say little about
cores; the server CPU per unit says what a worker costs, and whether a second worker adds overhead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import aqueduct
from aqueduct.quic.certs import make_dev_certs

CLI = [sys.executable, "-m", "aqueduct"]


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def load_handshakes(url: str, ca: str, window: float) -> dict[str, float]:
    done = 0
    closing: list[asyncio.Future[Any]] = []
    deadline = time.perf_counter() + window

    async def loop() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            conn = await aqueduct.connect(url, ca=ca, codec=aqueduct.RawCodec())
            done += 1
            closing.append(asyncio.ensure_future(conn.close()))

    start = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(16)))
    took = time.perf_counter() - start
    await asyncio.gather(*closing, return_exceptions=True)
    return {"count": done, "seconds": took}


async def load_messages(url: str, ca: str, window: float) -> dict[str, float]:
    async def one() -> tuple[int, float]:
        async with aqueduct.connect(url, ca=ca, codec=aqueduct.RawCodec()) as conn:
            tx, rx = aqueduct.channel()
            await conn.entrypoint.send(aqueduct.RawMessage(b"", [rx]))
            payload = b"x" * 64
            start = time.perf_counter()
            deadline = start + window
            n = 0
            while time.perf_counter() < deadline:
                await tx.send(payload)
                n += 1
            reply_tx, reply_rx = aqueduct.channel()
            await tx.send(aqueduct.RawMessage(b"end", [reply_tx]))
            await reply_rx.recv()
            return n, time.perf_counter() - start

    runs = await asyncio.gather(*(one() for _ in range(4)))
    return {"count": sum(n for n, _ in runs), "seconds": max(t for _, t in runs)}


def measure(workers: int, kind: str, window: float, loaders: int, certs: Any) -> dict[str, float]:
    server = subprocess.Popen([*CLI, "serve", "--echo", "--port", "0", "--cert", str(certs.cert), "--key",
                               str(certs.key), "--workers", str(workers),
                               "--limit", "max_connections_per_address=100000"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = "aqueduct://" + server.stdout.readline().strip().removeprefix("listening on ")
        pids = [server.pid]
        if workers > 1:
            pids = [int(p) for p in server.stdout.readline().rsplit("pids ", 1)[1].split(", ")]
        # the server prints a line per connection: keep reading them, or a full pipe stalls it
        threading.Thread(target=server.stdout.read, daemon=True).start()
        cpu0 = sum(cpu_seconds(p) for p in pids)
        loads = [subprocess.Popen([sys.executable, __file__, "--load", kind, "--url", url, "--ca", str(certs.ca),
                                   "--window", str(window)], stdout=subprocess.PIPE, text=True)
                 for _ in range(loaders)]
        results = [json.loads(p.communicate(timeout=window * 10 + 60)[0]) for p in loads]
        cpu = sum(cpu_seconds(p) for p in pids) - cpu0
    finally:
        server.terminate()
        server.wait(60)
    count = sum(r["count"] for r in results)
    seconds = max(r["seconds"] for r in results)
    return {"rate": count / seconds, "server_cpu_per_unit": cpu / max(1, count), "server_busy": cpu / seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--window", type=float, default=3.0)
    ap.add_argument("--loaders", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--load", choices=["handshakes", "messages"], help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--ca", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.load:
        fn = load_handshakes if args.load == "handshakes" else load_messages
        print(json.dumps(asyncio.run(fn(args.url, args.ca, args.window))))
        return
    scratch = tempfile.TemporaryDirectory()  # (removed when the run returns)
    certs = make_dev_certs(scratch.name)
    got: dict[tuple[int, str], list[dict[str, float]]] = {}
    for rnd in range(args.rounds):
        order = args.workers if rnd % 2 == 0 else list(reversed(args.workers))
        for n in order:
            for kind in ("handshakes", "messages"):
                got.setdefault((n, kind), []).append(measure(n, kind, args.window, args.loaders, certs))
    print(f"medians of {args.rounds} alternating rounds, {args.loaders} load processes, {args.window} s windows, "
          f"load average {os.getloadavg()[0]:.1f}")
    for n in args.workers:
        hs, ms = got[(n, "handshakes")], got[(n, "messages")]

        def med(rows: list[dict[str, float]], key: str) -> float:
            return statistics.median(r[key] for r in rows)

        print(f"{n} worker(s): {med(hs, 'rate'):,.0f} handshakes/s, server CPU "
              f"{med(hs, 'server_cpu_per_unit') * 1e3:.2f} ms per handshake ({med(hs, 'server_busy'):.0%} of a core); "
              f"{med(ms, 'rate'):,.0f} msgs/s, server CPU "
              f"{med(ms, 'server_cpu_per_unit') * 1e6:.1f} us per message ({med(ms, 'server_busy'):.0%} of a core)")


if __name__ == "__main__":
    main()

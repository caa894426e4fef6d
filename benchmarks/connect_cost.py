"""What a new connection costs: CPU per connection on each side, datagrams per connection, and where the time goes.

    .venv/bin/python benchmarks/connect_cost.py [--n 100] [--rounds 3] [--kinds aqueduct aioquic]
        [--modes open 1rtt 0rtt] [--profile DIR]

For each kind of server (aqueduct/bench/connpeer.py: Aqueduct with default settings, or raw aioquic serving the
bench protocol; Aqueduct's with single-use tickets, so 0-RTT work runs at once, as `aqueduct bench` serves it)
in its own process, and each mode, `--n` connections one after the other:
- `open`: connect (to the point each API calls connected), then close and wait until it is closed;
- `1rtt` / `0rtt`: connect, send a PING with a reply channel (raw aioquic: a PING frame on a stream), wait for
  the reply, wait for the session ticket, close (aqueduct/bench's `setup` of each client; `0rtt` resumes with
  the previous connection's ticket).
It prints, per connection, the CPU time of the measuring process (time.process_time) and of the server process
(/proc/PID/stat), the datagrams sent by both (/proc/net/snmp OutDatagrams: run it in a network namespace of its
own, e.g. `unshare -n sh -c 'ip link set lo up; ...'`, or other loopback traffic counts too), and the median time
to connected (`open`) or to the first reply. The machine may be shared: the CPU figures, not the wall times, are
the ones to compare.

`--profile DIR`: the client loop runs under cProfile and the server process too, both timing CPU, not wall
time (a loaded machine's waits would dominate a wall-clock profile); DIR gets
client-KIND-MODE.prof and server-KIND.prof (read them with `python -m pstats`).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aqueduct.bench import rawquic
from aqueduct.bench.clients import AqueductClient
from aqueduct.bench.connpeer import RAW_IDLE_TIMEOUT
from aqueduct.core.app import Delivery
from aqueduct.quic.certs import DevCerts, make_dev_certs


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid`."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def udp_out() -> int:
    """Datagrams sent in this network namespace so far."""
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Udp:")]
    return int(rows[1][rows[0].index("OutDatagrams")])


PROFILED_SERVER = """
import cProfile, runpy, sys, time
out = sys.argv.pop(1)
prof = cProfile.Profile(time.process_time)
prof.enable()
try:
    runpy.run_module("aqueduct.bench.connpeer", run_name="__main__")
finally:
    prof.disable()
    prof.dump_stats(out)
"""
"""connpeer.py under cProfile counting CPU time (the first argument: where the profile goes)."""


class Server:
    """A connpeer.py server process of one kind (optionally under cProfile)."""

    def __init__(self, kind: str, certs: DevCerts, profile: Path | None) -> None:
        run = ["-m", "aqueduct.bench.connpeer"]
        if profile is not None:
            run = ["-c", PROFILED_SERVER, str(profile / f"server-{kind}.prof")]
        cmd = [sys.executable, *run, "--kind", kind, "--cert", str(certs.cert), "--key", str(certs.key),
               "--single-use-tickets"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        info = json.loads(self.proc.stdout.readline())
        self.port, self.pid = int(info["port"]), int(info["pid"])

    def stop(self) -> None:
        """End the process (it ends on end of input)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


async def one(kind: str, mode: str, port: int, certs: DevCerts, client: Any) -> float:
    """One connection of `mode`; seconds to connected (`open`) or to the first reply."""
    if mode == "open":
        start = time.perf_counter()
        if kind == "aqueduct":
            import aqueduct

            conn = await aqueduct.connect(f"aqueduct://127.0.0.1:{port}", ca=certs.ca, codec=aqueduct.RawCodec())
            took = time.perf_counter() - start
            await conn.close()
        else:
            close = await rawquic.open_connection(port, certs.ca, RAW_IDLE_TIMEOUT)
            took = time.perf_counter() - start
            await close()
        return took
    return float((await client.setup(mode == "0rtt"))[0])


async def run(kind: str, mode: str, n: int, certs: DevCerts, server: Server, profile: Path | None) -> dict[str, Any]:
    """`n` connections of `mode` to `server`; the per-connection figures."""
    client: Any = (AqueductClient(server.port, certs.ca, "raw", Delivery.ORDERED) if kind == "aqueduct"
                   else rawquic.RawQuicClient(server.port, certs.ca))
    if mode == "0rtt":
        await client.setup(True)  # the first ticket
    for _ in range(3):  # warm-up (imports, first-use caches)
        await one(kind, mode, server.port, certs, client)
    walls: list[float] = []
    prof = cProfile.Profile(time.process_time) if profile is not None else None
    c0, s0, d0 = time.process_time(), cpu_seconds(server.pid), udp_out()
    if prof is not None:
        prof.enable()
    for _ in range(n):
        walls.append(await one(kind, mode, server.port, certs, client))
    if prof is not None:
        prof.disable()
    c1, s1, d1 = time.process_time(), cpu_seconds(server.pid), udp_out()
    if prof is not None and profile is not None:
        prof.dump_stats(str(profile / f"client-{kind}-{mode}.prof"))
    accepted = None
    if mode == "0rtt":
        accepted = sum([(await client.setup(True))[1] for _ in range(5)])
    return {"kind": kind, "mode": mode, "n": n, "client_cpu_ms": (c1 - c0) / n * 1000,
            "server_cpu_ms": (s1 - s0) / n * 1000, "datagrams": (d1 - d0) / n,
            "connect_ms_p50": statistics.median(walls) * 1000, "0rtt_accepted_of_5": accepted}


async def main() -> None:
    """Command-line entry."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kinds", nargs="+", default=["aqueduct", "aioquic"])
    ap.add_argument("--modes", nargs="+", default=["open", "1rtt", "0rtt"])
    ap.add_argument("--profile", type=Path)
    args = ap.parse_args()
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        certs = make_dev_certs(tmp)
        servers = {kind: Server(kind, certs, args.profile) for kind in args.kinds}
        try:
            for rnd in range(args.rounds):
                for mode in args.modes:
                    kinds = args.kinds if rnd % 2 == 0 else list(reversed(args.kinds))
                    for kind in kinds:
                        row = await run(kind, mode, args.n, certs, servers[kind], args.profile)
                        print(json.dumps({"round": rnd, **{k: round(v, 3) if isinstance(v, float) else v
                                                           for k, v in row.items()}}), flush=True)
        finally:
            for s in servers.values():
                s.stop()


if __name__ == "__main__":
    asyncio.run(main())

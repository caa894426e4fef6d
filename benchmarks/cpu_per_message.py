"""CPU per message at each end of one cross-process one-way workload (where `aqueduct bench` spends its time).

Starts the benchmark peer (aqueduct.bench.peer) in its own process, warms one
connection, then sends for --seconds and prints the rate and the CPU time per
message of this process (the sender) and of the peer (the receiver), read
from /proc: a rate says how fast, CPU per message says which end limits it
and by how much (compare runs, not machines).

    .venv/bin/python benchmarks/cpu_per_message.py \
        ordered|unordered|unreliable|channels|tuned|rtt|cbor|typed|aioquic|datagrams|per-message|aioquic-rtt
        [--size BYTES] [--seconds S] [--uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from aqueduct.bench.clients import AqueductClient, Rate
from aqueduct.bench.rawquic import RawQuicClient
from aqueduct.core.app import Delivery
from aqueduct.quic.certs import make_dev_certs

MODES = {"ordered": Delivery.ORDERED, "unordered": Delivery.UNORDERED, "unreliable": Delivery.UNRELIABLE,
         "channels": Delivery.ORDERED, "tuned": Delivery.ORDERED, "rtt": Delivery.ORDERED, "cbor": Delivery.ORDERED,
         "typed": Delivery.ORDERED}
"""cbor: ordered 64 B through the CBOR codec; typed: the same with `aqueduct bench`'s typed rows' BenchOrder values
(checked on send, converted on arrival): typed against cbor is the typed row's ratio."""
RAW = ("aioquic", "datagrams", "per-message", "aioquic-rtt")


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _client(workload: str, ports: dict[str, int], ca: Any) -> AqueductClient | RawQuicClient:
    if workload in RAW:
        return RawQuicClient(ports["aioquic"], ca, datagrams=workload == "datagrams",
                             per_message=workload == "per-message")
    if workload in ("cbor", "typed"):
        return AqueductClient(ports["aqueduct-cbor"], ca, "cbor", Delivery.ORDERED, typed=workload == "typed")
    if workload == "tuned":
        return AqueductClient(ports["aqueduct-tuned"], ca, "raw", Delivery.ORDERED, tuned=True)
    return AqueductClient(ports["aqueduct-raw"], ca, "raw", MODES[workload])


async def run(workload: str, size: int, seconds: float, uvloop: bool) -> str:
    """One measurement, as a line of text."""
    scratch = tempfile.TemporaryDirectory()  # (removed when the run returns)
    certs = make_dev_certs(scratch.name)
    cmd = [sys.executable, "-m", "aqueduct.bench.peer", "--cert", str(certs.cert), "--key", str(certs.key)]
    peer = subprocess.Popen(cmd + (["--uvloop"] if uvloop else []), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert peer.stdin is not None and peer.stdout is not None
    try:
        client = _client(workload, json.loads(peer.stdout.readline()), certs.ca)
        await client.open()

        async def measure(window: float) -> Any:
            if workload in ("rtt", "aioquic-rtt"):  # one 64 B message at a time, echoed
                start = time.perf_counter()
                trips = await client.rtt(size, window, 10**9)
                return Rate(len(trips), len(trips) * size, time.perf_counter() - start)
            if workload == "channels":
                assert isinstance(client, AqueductClient)
                return await client.channels(window, 10**9)
            return await client.oneway(size, window, 10**9)

        await measure(0.3)  # warm the connection
        peer0, ours0 = _cpu_seconds(peer.pid), time.process_time()
        rate = await measure(seconds)
        peer_cpu, our_cpu = _cpu_seconds(peer.pid) - peer0, time.process_time() - ours0
        await client.close()
    finally:
        peer.stdin.close()
        peer.wait(10)
    n = rate.messages
    what = ("channels created" if workload == "channels" else f"{workload} {size} B round trips"
            if workload.endswith("rtt") else f"{workload} {size} B messages")
    per = "channel" if workload == "channels" else "round trip" if workload.endswith("rtt") else "message"
    busy_ours, busy_peer = our_cpu / rate.seconds, peer_cpu / rate.seconds
    return (f"{what}: {n / rate.seconds:,.0f}/s; CPU per {per}: sender {our_cpu / n * 1e6:.2f} us "
            f"({busy_ours:.0%} busy), receiver {peer_cpu / n * 1e6:.2f} us ({busy_peer:.0%} busy)")


def main() -> None:
    """Command-line entry."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=[*MODES, *RAW])
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--uvloop", action="store_true", help="both processes on uvloop")
    args = ap.parse_args()
    if args.uvloop:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    print(asyncio.run(run(args.workload, args.size, args.seconds, args.uvloop)))


if __name__ == "__main__":
    main()

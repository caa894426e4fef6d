"""What recording costs: message throughput with and without `record=` on both ends, over real QUIC on loopback.

Server and client run in one process on one event loop (so both recorders'
hot paths and writer threads compete for the same GIL), the client sends
N messages of S bytes on the entrypoint (raw codec, reliable ordered) and
the clock stops when the server has taken the last one. Two figures per
run: wall-clock msgs/s, and process CPU time per message (all threads,
both ends), which is what recording adds and is robust on a busy machine.
Rounds alternate off/on; medians are reported. A second figure isolates
the recorder: process CPU per message for a tap's `sent` + `acked` (the
sender's rows) and `received` (the receiver's), writer thread included, with
no network at all.

    .venv/bin/python benchmarks/recording_overhead.py [--messages 20000] [--size 64] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import aqueduct
from aqueduct.api.codec import RawCodec
from aqueduct.quic.certs import DevCerts, make_dev_certs


async def one_round(certs: DevCerts, n: int, size: int, record: Path | None) -> tuple[float, float]:
    """(messages per second, CPU microseconds per message) for one run."""
    done = asyncio.Event()
    payload = b"x" * size

    async def take_all(conn: aqueduct.Connection) -> None:
        count = 0
        async for _ in conn.entrypoint:
            count += 1
            if count == n:
                done.set()

    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, codec=RawCodec(),
                              record=record / "server" if record else None) as server:  # fmt: skip
        tasks = set()

        async def accept() -> None:
            async for conn in server:
                tasks.add(asyncio.ensure_future(take_all(conn)))

        acceptor = asyncio.ensure_future(accept())
        host, port = server.address
        async with aqueduct.connect(f"aqueduct://{host}:{port}", ca=certs.ca, codec=RawCodec(),
                                    record=record / "client" if record else None) as conn:  # fmt: skip
            start, cpu = time.perf_counter(), time.process_time()
            for _ in range(n):
                await conn.entrypoint.send(payload)
            await asyncio.wait_for(done.wait(), 120)
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        acceptor.cancel()
        for t in tasks:
            t.cancel()
    return n / elapsed, cpu / n * 1e6


def isolated_cpu_us(n: int, size: int, directory: Path) -> float:
    """CPU microseconds (all threads) to record one message at both ends: sent, acked, received rows."""
    from aqueduct.core.app import Delivery
    from aqueduct.recording import Recorder

    payload = b"x" * size
    start = time.process_time()
    with Recorder(directory) as rec:
        tx, rx = rec.connection("client"), rec.connection("server")
        for i in range(n):
            tx.sent(4, i, Delivery.ORDERED, payload)
            rx.received(4, i, Delivery.ORDERED, payload)
            if i % 16 == 15:
                tx.acked(4, True, i - 15, i + 1)
    return (time.process_time() - start) / n * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        certs = make_dev_certs(tmp)
        runs: dict[str, list[tuple[float, float]]] = {"off": [], "on": []}
        for r in range(args.rounds):
            for mode in ("off", "on"):
                record = Path(tmp) / f"rec-{r}" if mode == "on" else None
                runs[mode].append(await one_round(certs, args.messages, args.size, record))
        iso = statistics.median(isolated_cpu_us(200_000, args.size, Path(tmp) / f"iso-{i}") for i in range(3))
    rate = {m: statistics.median(x[0] for x in v) for m, v in runs.items()}
    cpu = {m: statistics.median(x[1] for x in v) for m, v in runs.items()}
    print(f"{args.messages} x {args.size} B, {args.rounds} rounds, medians (both ends in one process):")
    for m in ("off", "on"):
        print(f"  recording {m:3}: {rate[m]:9,.0f} msgs/s   {cpu[m]:6.1f} us CPU/msg")
    print(f"  recorder alone (no network): {iso:.2f} us CPU per message, both ends, writer thread included")
    print(
        f"  recording costs {cpu['on'] - cpu['off']:.1f} us CPU per message "
        f"({100 * (cpu['on'] / cpu['off'] - 1):.1f}%), "
        f"throughput {100 * (rate['on'] / rate['off'] - 1):+.1f}%"
    )


if __name__ == "__main__":
    asyncio.run(main())

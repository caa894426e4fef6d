"""CPU per 64 B message through the whole stack (API, engine, adapter, aioquic), both ends in one process.

A client sends N messages on one channel to an in-process server that counts
them; the figure is process CPU time / N, so it sums both ends and does not
depend on how two processes would share the cores (compare runs, not
machines). Used for issue 8's per-message work; `aqueduct bench` has the
cross-process figures. `--mode channels` measures channel creation instead:
each message carries a new channel's Receiver, that channel carries one
message and finishes, and the server reads it and closes (as `aqueduct bench`).
`--profile` prints cProfile's top functions by own time.

    .venv/bin/python benchmarks/api_cpu_bench.py [--messages N] [--mode ordered|unordered|unreliable|channels]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import tempfile
import time

import aqueduct
from aqueduct.bench.protocol import pack, unpack
from aqueduct.bench.settings import bench_settings
from aqueduct.quic.certs import make_dev_certs


async def run(n: int, mode: str = "ordered", profile: cProfile.Profile | None = None) -> tuple[int, float, float]:
    """(messages counted, CPU seconds, wall seconds) for `n` 64 B messages sent in `mode` (or `n` channels)."""
    scratch = tempfile.TemporaryDirectory()  # (removed when the run returns)
    certs = make_dev_certs(scratch.name)
    settings = bench_settings()
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def sink(conn: aqueduct.Connection) -> None:
        async for obj in conn.entrypoint:
            rx = unpack("raw", obj)[1][0]
            break
        count = 0
        async for obj in rx:
            count += 1
            if mode == "channels":
                inner = unpack("raw", obj)[1][0]
                await inner.recv()
                inner.close()
        done.set_result(count)

    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, codec=aqueduct.RawCodec(),
                              settings=settings) as server:
        tasks: set[asyncio.Task[None]] = set()

        async def accept() -> None:
            async for conn in server:
                tasks.add(asyncio.ensure_future(sink(conn)))

        acceptor = asyncio.ensure_future(accept())
        conn = await aqueduct.connect(f"aqueduct://127.0.0.1:{server.address[1]}", ca=certs.ca,
                                      codec=aqueduct.RawCodec(), settings=settings)
        tx, rx = aqueduct.channel("ordered" if mode == "channels" else mode)
        await conn.entrypoint.send(pack("raw", b"", [rx]))
        payload = b"x" * 64
        one = pack("raw", b"x")
        cpu, wall = time.process_time(), time.perf_counter()
        if profile is not None:
            profile.enable()
        for _ in range(n):
            if mode == "channels":
                ctx, crx = aqueduct.channel()
                await tx.send(pack("raw", b"", [crx]))
                await ctx.send(one)
                await ctx.finish()
            else:
                await tx.send(payload)
        await tx.finish()
        got = await done
        if profile is not None:
            profile.disable()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        await conn.close()
        acceptor.cancel()
    return got, cpu, wall


def main() -> None:
    """Print the figure."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=30_000)
    ap.add_argument("--mode", choices=("ordered", "unordered", "unreliable", "channels"), default="ordered")
    ap.add_argument("--profile", action="store_true", help="print cProfile's top 40 functions by own time")
    args = ap.parse_args()
    profile = cProfile.Profile() if args.profile else None
    got, cpu, wall = asyncio.run(run(args.messages, args.mode, profile))
    per = cpu / got * 1e6
    print(f"{args.mode} {got:,} msgs: {per:.1f} us CPU per message (both ends), {got / wall:,.0f} msgs/s, one process")
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(40)


if __name__ == "__main__":
    main()

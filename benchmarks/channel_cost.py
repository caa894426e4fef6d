"""What a channel costs: a request with a fresh oneshot reply, end to end, per call on each side.

    .venv/bin/python benchmarks/channel_cost.py [--seconds 2] [--flight 1] [--rounds 3] [--profile DIR]

The serving peer is `benchmarks.services --serve` (the typed `Add` requests `aqueduct bench --services`
measures, answered on their reply oneshot), in its own process; this process calls
`aqueduct.request(target, lambda r: Add(1, 2, r))` with `--flight` calls in flight for `--seconds`, and prints,
per call: calls/s, the CPU time of each side (this process's `time.process_time()`, the peer's asked for on its
stdin), the QUIC datagrams each way and the Aqueduct frames each way by type (both read at this end: what the
client's engine writes and what arrives for it). The machine may be shared: compare the CPU and the counts, not
the rates.

`--profile DIR`: each process runs the rounds under cProfile (its default clock: timing CPU time would make a
system call per function call and swamp the figures); DIR gets client.prof and server.prof, and `--top N`
prints each side's top functions by own time, with their calls per call, and each floor's share (aioquic, the
adapter, the engine, the wire, the API, asyncio). The waits (the event loop's poll) and the socket sends (on
loopback the kernel delivers to the peer inside `sendto`, where a loaded machine also preempts the sender) are
left out of the shares. The profiler's own cost inflates the CPU figures of a profiled run several times.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import json
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aqueduct.api.request import request
from aqueduct.core.incoming import Incoming
from aqueduct.core.outbox import Outbox
from aqueduct.core.transport import SendStreamData, StreamDataReceived
from aqueduct.quic.certs import make_dev_certs
from aqueduct.quic.protocol import AqueductProtocol
from aqueduct.services import connect
from aqueduct.wire.reader import decode_frames
from benchmarks.services import Add

PROFILED_PEER = """
import cProfile, runpy, sys, time
out = sys.argv.pop(1)
prof = cProfile.Profile()
cpu, on = time.process_time, [False]

def toggled():  # the peer answers each CPU? line from its loop: the first starts a round, the next ends it
    on[0] = not on[0]
    (prof.enable if on[0] else prof.disable)()
    return cpu()

time.process_time = toggled
try:
    runpy.run_module("benchmarks.services", run_name="__main__", alter_sys=True)
finally:
    prof.dump_stats(out)
"""
"""The services peer under cProfile while measured (the first argument: where the profile goes)."""


class Counts:
    """Datagrams and Aqueduct frames each way, seen from this (the client's) end."""

    def __init__(self) -> None:
        self.frames: collections.Counter[str] = collections.Counter()
        self.datagrams = collections.Counter[str]()

    def install(self) -> None:
        """Wrap the client's adapter and outbox (this process only serves as a client)."""
        counts = self
        command, received, transmit = Outbox.command, AqueductProtocol.datagram_received, AqueductProtocol.transmit
        on_data = Incoming.on_stream_data

        def on_stream_data(incoming: Incoming, ev: StreamDataReceived) -> None:
            if ev.data:  # (a small exchange's chunks are whole frames)
                for frame in decode_frames(ev.data, 1 << 24):
                    counts.frames["in " + type(frame).__name__] += 1
            on_data(incoming, ev)

        def on_command(box: Outbox, cmd: Any) -> None:
            if type(cmd) is SendStreamData and cmd.data:
                for frame in decode_frames(cmd.data, 1 << 24):
                    counts.frames["out " + type(frame).__name__] += 1
            command(box, cmd)

        def on_datagram(proto: AqueductProtocol, data: bytes, addr: Any) -> None:
            counts.datagrams["in"] += 1
            received(proto, data, addr)

        def on_transmit(proto: AqueductProtocol) -> None:
            quic = proto._quic
            send = quic.datagrams_to_send

            def counted(now: float) -> list[tuple[bytes, Any]]:
                out = send(now=now)
                counts.datagrams["out"] += len(out)
                return out

            quic.datagrams_to_send = counted  # type: ignore[method-assign]
            try:
                transmit(proto)
            finally:
                del quic.datagrams_to_send

        Outbox.command = on_command  # type: ignore[method-assign]
        Incoming.on_stream_data = on_stream_data  # type: ignore[method-assign]
        AqueductProtocol.datagram_received = on_datagram  # type: ignore[method-assign]
        AqueductProtocol.transmit = on_transmit  # type: ignore[method-assign]


async def measure(args: argparse.Namespace, certs: Path) -> None:
    run = ["-m", "benchmarks.services"]
    if args.profile is not None:
        run = ["-c", PROFILED_PEER, str(args.profile / "server.prof")]
    proc = subprocess.Popen([sys.executable, *run, "--serve", str(certs), "--no-grpc"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    ports = json.loads(stdout.readline())

    def peer_cpu() -> float:
        stdin.write("CPU?\n")
        stdin.flush()
        return float(stdout.readline())

    counts = Counts()
    if args.count:
        counts.install()
    conn = await connect(f"aqueduct://127.0.0.1:{ports['request']}", ca=certs / "ca.pem", entrypoint=Add)
    target = conn.entrypoint
    prof = cProfile.Profile() if args.profile is not None else None
    calls = 0
    try:
        for _ in range(200):  # warm up
            await request(target, lambda r: Add(1, 2, r))
        for rnd in range(args.rounds):
            await asyncio.sleep(0.1)  # the warm-up's (or last round's) closes settle
            counts.frames.clear()
            counts.datagrams.clear()
            n = 0
            stop = time.perf_counter() + args.seconds

            async def caller(stop: float = stop) -> None:
                nonlocal n
                while time.perf_counter() < stop:
                    await request(target, lambda r: Add(1, 2, r))
                    n += 1

            c0, s0, t0 = time.process_time(), peer_cpu(), time.perf_counter()
            if prof is not None:
                prof.enable()
            await asyncio.gather(*(caller() for _ in range(args.flight)))
            if prof is not None:
                prof.disable()
            c1, s1, t1 = time.process_time(), peer_cpu(), time.perf_counter()
            await asyncio.sleep(0.1)  # the last closes reach the counts
            row: dict[str, Any] = {"round": rnd, "flight": args.flight, "calls_s": round(n / (t1 - t0)),
                                   "client_cpu_us": round((c1 - c0) / n * 1e6, 1),
                                   "server_cpu_us": round((s1 - s0) / n * 1e6, 1)}
            if args.count:
                row["datagrams_per_call"] = {k: round(v / n, 2) for k, v in sorted(counts.datagrams.items())}
                row["frames_per_call"] = {k: round(v / n, 2) for k, v in sorted(counts.frames.items())}
            print(json.dumps(row), flush=True)
            calls += n
    finally:
        await conn.close()
        stdin.close()
        proc.wait(30)
    if prof is not None:
        prof.dump_stats(str(args.profile / "client.prof"))
        for side in ("client", "server"):
            top(args.profile / f"{side}.prof", args.top, calls)
        print(json.dumps({"calls": calls}))


IDLE = ("<method 'poll' of 'select.epoll' objects>", "<method 'sendto' of '_socket.socket' objects>",
        "<method 'send' of '_socket.socket' objects>")
"""What is left out of the shares (see the module comment)."""
FLOORS = ("aioquic/", "aqueduct/quic/", "aqueduct/core/", "aqueduct/wire/", "aqueduct/api/", "asyncio/")


def top(path: Path, n: int, calls: int) -> None:
    """Print a profile's `n` functions with the most own time (share of the total), with their calls per call,
    and each floor's share."""
    loaded = pstats.Stats(str(path))
    stats: dict[Any, Any] = loaded.stats  # type: ignore[attr-defined]
    own: dict[str, tuple[float, int]] = {}
    floors: collections.Counter[str] = collections.Counter()
    for (file, line, name), (_cc, ncalls, tottime, _cum, _callers) in stats.items():
        if name in IDLE:
            continue
        where = "/".join(Path(file).parts[-3:])
        own[f"{name} ({where}:{line})"] = (tottime, ncalls)
        floors[next((f for f in FLOORS if f in file), "other")] += tottime
    total = sum(t for t, _ in own.values()) or 1.0
    print(f"{path.stem}: {loaded.total_calls / max(calls, 1):.0f} function calls and "  # type: ignore[attr-defined]
          f"{total / max(calls, 1) * 1e6:.0f} us of profiled time per call; " +
          ", ".join(f"{f.rstrip('/')} {t / total:.0%}" for f, t in floors.most_common()))
    for func, (t, ncalls) in sorted(own.items(), key=lambda kv: kv[1][0], reverse=True)[:n]:
        print(f"  {t / total:6.1%}  {ncalls / max(calls, 1):6.2f}/call  {func}")


def main() -> None:
    """Command-line entry."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--flight", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--count", action="store_true", help="count datagrams and frames (costs CPU: not with CPU figures)")
    ap.add_argument("--profile", type=Path)
    ap.add_argument("--top", type=int, default=25, help="with --profile: functions printed per side")
    args = ap.parse_args()
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        make_dev_certs(tmp)
        asyncio.run(measure(args, Path(tmp)))


if __name__ == "__main__":
    main()

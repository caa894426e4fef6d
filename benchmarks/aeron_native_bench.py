# Throughput and round-trip latency of aeron_compat's native Aeron UDP transport against a real Aeron
# C media driver (pyaeron, in its own Python 3.12 process), the real driver against itself, and
# aeron_compat over Aqueduct/QUIC (benchmarks/aeron_bench.py), side by side in one run, loopback.
# Throughput: `count` 32-byte messages offered as fast as back pressure allows; the rate is taken
# at the receiver, first to last message.  RTT: one message in flight, ping -> pong -> ping.
"""`python benchmarks/aeron_native_bench.py [--count N] [--pings N] [--size B]`."""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aeron_compat import Aeron, Context
from aeron_compat.native.interop import RealPeer, ensure_venv

STREAM, REPLY_STREAM = 3001, 3002


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def udp(port: int, native: bool = False) -> str:
    return f"aeron:udp?endpoint=127.0.0.1:{port}" + ("|transport=native" if native else "")


def idle(spins: int) -> None:
    """Yield the GIL to the native driver thread while waiting."""
    time.sleep(0 if spins < 1000 else 0.0001)


def native_to_real(py: Path, aeron: Aeron, count: int, size: int) -> float:
    port = free_port()
    with RealPeer(py, role="sub", channel=udp(port), stream=STREAM, count=count, report=False) as peer:
        peer.expect("ready")
        pub = aeron.add_exclusive_publication(udp(port, True), STREAM)
        payload = bytes(size)
        sent = spins = 0
        while sent < count:
            if pub.offer(payload) > 0:
                sent += 1
                spins = 0
            else:
                spins += 1
                idle(spins)
        done = peer.expect("done", timeout=120)
        pub.close()
        return float(count / done["elapsed"])


def real_to_native(py: Path, aeron: Aeron, count: int, size: int) -> float:
    port = free_port()
    sub = aeron.add_subscription(udp(port, True), STREAM)
    got = [0, 0.0, 0.0]

    def on_fragment(buf: memoryview, header: Any) -> None:
        got[0] += 1

    with RealPeer(py, role="blast", channel=udp(port), stream=STREAM, count=count, size=size) as peer:
        peer.expect("ready")
        spins = 0
        deadline = time.monotonic() + 120
        while got[0] < count and time.monotonic() < deadline:
            before = got[0]
            if sub.poll(on_fragment, 1024):
                now = time.perf_counter()
                if before == 0:
                    got[1] = now
                got[2] = now
                spins = 0
            else:
                spins += 1
                idle(spins)
    sub.close()
    if got[0] < count:
        raise RuntimeError(f"only {got[0]} of {count} messages arrived")
    return count / (got[2] - got[1])


def real_to_real(py: Path, count: int, size: int) -> float:
    port = free_port()
    with RealPeer(py, role="sub", channel=udp(port), stream=STREAM, count=count, report=False) as sub:
        sub.expect("ready")
        with RealPeer(py, role="blast", channel=udp(port), stream=STREAM, count=count, size=size):
            done = sub.expect("done", timeout=120)
    return float(count / done["elapsed"])


def native_ping_real_pong(py: Path, aeron: Aeron, pings: int, size: int) -> list[int]:
    ping_port, pong_port = free_port(), free_port()
    with RealPeer(py, role="pong", channel=udp(ping_port), stream=STREAM, reply_channel=udp(pong_port),
                  reply_stream=REPLY_STREAM) as peer:
        peer.expect("ready")
        sub = aeron.add_subscription(udp(pong_port, True), REPLY_STREAM)
        pub = aeron.add_exclusive_publication(udp(ping_port, True), STREAM)
        got = [0]

        def on_fragment(buf: memoryview, header: Any) -> None:
            got[0] += 1

        payload = bytes(size)
        samples: list[int] = []
        for i in range(pings + pings // 10):
            start = time.perf_counter_ns()
            spins = 0
            while pub.offer(payload) < 0:
                spins += 1
                idle(spins)
            spins = 0
            while not sub.poll(on_fragment, 1):
                spins += 1
                idle(spins)
            if i >= pings // 10:
                samples.append(time.perf_counter_ns() - start)
        pub.close()
        sub.close()
        return samples


def real_ping_real_pong(py: Path, pings: int, size: int) -> list[int]:
    ping_port, pong_port = free_port(), free_port()
    with RealPeer(py, role="pong", channel=udp(ping_port), stream=STREAM, reply_channel=udp(pong_port),
                  reply_stream=REPLY_STREAM) as pong:
        pong.expect("ready")
        with RealPeer(py, role="ping", channel=udp(ping_port), stream=STREAM, reply_channel=udp(pong_port),
                      reply_stream=REPLY_STREAM, count=pings, warmup=pings // 10, size=size) as ping:
            samples: list[int] = ping.expect("done", timeout=120)["rtt_ns"]
    return samples


def over_aqueduct(count: int, pings: int, size: int) -> tuple[float | None, list[int], str]:
    """aeron_compat over Aqueduct/QUIC via benchmarks/aeron_bench.py (None and a reason if unavailable)."""
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        import aeron_bench

        ping, pong, media = aeron_bench.CHANNELS["udp-quic"]
        with Aeron.connect(Context(udp_media=media)) as a, Aeron.connect(Context(udp_media=media)) as b:
            rate = aeron_bench.throughput(a, b, ping, size, max(1.0, count / 100_000))
            rtts = aeron_bench.round_trips(a, b, ping, pong, size, pings)
        return rate, [int(r * 1e9) for r in rtts], ""
    except Exception as exc:  # the Aqueduct media is another team's moving target: report, don't crash
        return None, [], f"{type(exc).__name__}: {exc}"


def us(samples: list[int], q: float) -> str:
    if not samples:
        return "n/a"
    ordered = sorted(samples)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000:.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--count", type=int, default=200_000, help="messages per throughput run")
    ap.add_argument("--pings", type=int, default=2_000, help="round trips per RTT run")
    ap.add_argument("--size", type=int, default=32, help="message size in bytes")
    ap.add_argument("--repeat", type=int, default=3, help="throughput runs per case (the median is shown)")
    ap.add_argument("--skip-aqueduct", action="store_true", help="leave out aeron_compat over Aqueduct/QUIC")
    args = ap.parse_args()
    py = ensure_venv()
    rows: list[tuple[str, float | None, list[int]]] = []
    def median_of(run: Callable[[], float]) -> float:
        return statistics.median(run() for _ in range(args.repeat))

    with Aeron.connect() as aeron:
        rows.append(("aeron_compat native -> real driver",
                     median_of(lambda: native_to_real(py, aeron, args.count, args.size)), []))
        rows.append(("real driver -> aeron_compat native",
                     median_of(lambda: real_to_native(py, aeron, args.count, args.size)), []))
        rows.append(("real driver -> real driver", median_of(lambda: real_to_real(py, args.count, args.size)), []))
        rows.append(("RTT aeron_compat native <-> real driver", None,
                     native_ping_real_pong(py, aeron, args.pings, args.size)))
    rows.append(("RTT real driver <-> real driver", None, real_ping_real_pong(py, args.pings, args.size)))
    note = "skipped"
    if not args.skip_aqueduct:
        rate, rtts, note = over_aqueduct(args.count, args.pings, args.size)
        rows.append(("aeron_compat over Aqueduct/QUIC (one process)", rate, []))
        rows.append(("RTT aeron_compat over Aqueduct/QUIC", None, rtts))
    print(f"{args.size}-byte messages, loopback UDP; throughput: median of {args.repeat} runs of {args.count} msgs; "
          f"RTT: {args.pings} round trips")
    print(f"{'case':50} {'msgs/s':>10} {'RTT p50 us':>11} {'p99 us':>8} {'mean us':>8}")
    for name, rate, samples in rows:
        mean = f"{statistics.fmean(samples) / 1000:.1f}" if samples else ""
        print(f"{name:50} {'' if rate is None else f'{rate:,.0f}':>10} {us(samples, 0.5) if samples else '':>11} "
              f"{us(samples, 0.99) if samples else '':>8} {mean:>8}")
    if note:
        print(f"aeron_compat over Aqueduct: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

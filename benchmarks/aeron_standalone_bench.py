# Cross-process figures through the standalone driver (`aeron_compat driver`): this process starts
# a driver and a second client process, then measures
#   throughput  offers here -> driver -> polls in the other process (which reports when it has all)
#   RTT         ping offered here, echoed by the other process on a second stream, polled here
# for aeron:ipc (through the driver) and aeron:udp (the driver's own endpoint).  Both clients poll
# with a BackoffIdleStrategy, as the guide's examples do.
"""`python benchmarks/aeron_standalone_bench.py [--count N] [--rtts N] [--size N]`."""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aeron_compat import Aeron, BackoffIdleStrategy, Context


def _ctx(directory: str) -> Context:
    return Context(driver_mode="standalone", aeron_dir=directory, counters_interval=0)


def peer(directory: str, channel: str, count: int) -> None:
    """The other process: count `count` messages on stream 1 (say "done"), then echo stream 2 to 3."""
    with Aeron.connect(_ctx(directory)) as aeron:
        sink = aeron.add_subscription(channel, 1)
        ping = aeron.add_subscription(channel, 2)
        pong = aeron.add_publication(channel, 3)
        print("ready", flush=True)
        idle, seen = BackoffIdleStrategy(max_park_period_ns=50_000), [0]
        while seen[0] < count:
            idle.idle(sink.poll(lambda b, h: seen.__setitem__(0, seen[0] + 1), 256))
        print("done", flush=True)

        def echo(buf: memoryview, hdr: object) -> None:
            while pong.offer(buf) < 0:
                pass

        while True:
            idle.idle(ping.poll(echo, 16))


def measure(directory: str, channel: str, count: int, rtts: int, size: int) -> tuple[float, list[float]]:
    other = subprocess.Popen([sys.executable, __file__, "--peer", directory, channel, str(count)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "ready"
        with Aeron.connect(_ctx(directory)) as aeron:
            pub = aeron.add_publication(channel, 1)
            while not pub.is_connected:
                time.sleep(0.001)
            payload, idle = bytes(size), BackoffIdleStrategy(max_park_period_ns=50_000)
            start = time.perf_counter()
            for _ in range(count):
                while pub.offer(payload) < 0:
                    idle.idle(0)
            assert other.stdout.readline().strip() == "done"
            rate = count / (time.perf_counter() - start)
            ping, pong = aeron.add_publication(channel, 2), aeron.add_subscription(channel, 3)
            while not (ping.is_connected and pong.image_count):
                time.sleep(0.001)
            got, samples = [0], []
            for _ in range(rtts):
                t0, before = time.perf_counter(), got[0]
                while ping.offer(payload) < 0:
                    idle.idle(0)
                while got[0] == before:
                    idle.idle(pong.poll(lambda b, h: got.__setitem__(0, got[0] + 1), 1))
                samples.append(time.perf_counter() - t0)
            return rate, samples
    finally:
        other.kill()
        other.wait()


def main() -> int:
    """Run the driver, measure ipc and udp, print one line each."""
    if sys.argv[1:2] == ["--peer"]:
        peer(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--rtts", type=int, default=5_000)
    parser.add_argument("--size", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = str(Path(tmp) / "drv")
        driver = subprocess.Popen([sys.executable, "-m", "aeron_compat", "driver", "--dir", directory],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert driver.stdout is not None and driver.stdout.readline().startswith("driver listening")
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            for name, channel in (("ipc", "aeron:ipc"), ("udp", f"aeron:udp?endpoint=127.0.0.1:{port}")):
                rate, rtt = measure(directory, channel, args.count, args.rtts, args.size)
                q = statistics.quantiles(rtt, n=100)
                print(f"standalone {name:4s} {args.size}B: {rate:,.0f} msg/s offer->poll across processes; "
                      f"RTT p50 {q[49] * 1e6:.0f} us, p99 {q[98] * 1e6:.0f} us", flush=True)
        finally:
            driver.terminate()
            driver.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())

# Offer-to-poll throughput and round-trip latency of small messages on aeron_compat.
# Throughput: one thread offers bursts until back pressured and polls them, so the figure is the
# full offer + poll cost per message (Python has no parallel threads to overlap them).  RTT: a
# ping publication and a pong publication on two streams; each round trip is offer, poll, offer,
# poll.  Channels: aeron:ipc; aeron:udp on the in-process loopback media; aeron:udp over Aqueduct/QUIC
# between two drivers, either each on its own loop thread with the measuring thread offering and
# polling (udp-quic: the sync users' model) or both on the measuring coroutine's loop (udp-quic-async).
"""`python benchmarks/aeron_bench.py [--seconds S] [--size N] [--channels ipc,udp]`."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from aeron_compat import Aeron, BackoffIdleStrategy, Context

CHANNELS = {
    "ipc": ("aeron:ipc", "aeron:ipc", "loopback"),
    "udp-loopback": ("aeron:udp?endpoint=localhost:29001", "aeron:udp?endpoint=localhost:29002", "loopback"),
    "udp-quic": ("aeron:udp?endpoint=localhost:29011", "aeron:udp?endpoint=localhost:29012", "aqueduct"),
}


def wait_connected(*pubs: Any) -> None:
    """Until every publication has a subscriber (network setups take a few milliseconds)."""
    deadline = time.monotonic() + 10
    while not all(p.is_connected for p in pubs):
        if time.monotonic() > deadline:
            raise TimeoutError("publication never connected")
        time.sleep(0.001)


def throughput(a: Aeron, b: Aeron, channel: str, size: int, seconds: float) -> float:
    """Messages per second from offer (client a) to poll (client b), one thread."""
    sub = b.add_subscription(channel, 1)
    pub = a.add_publication(channel, 1)
    wait_connected(pub)
    payload = bytes(size)
    received = 0

    def handler(buf: memoryview, hdr: object) -> None:
        nonlocal received
        received += 1

    offer, poll = pub.offer, sub.poll
    idle = BackoffIdleStrategy()
    sent = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        work = 0
        for _ in range(1000):
            if offer(payload) > 0:
                sent += 1
                work += 1
            else:
                break
        idle.idle(work + poll(handler, 1_000_000))
    idle = BackoffIdleStrategy()
    while received < sent:
        idle.idle(poll(handler, 1_000_000))
    elapsed = time.perf_counter() - start
    assert received == sent, (received, sent)
    pub.close()
    sub.close()
    return received / elapsed


def round_trips(a: Aeron, b: Aeron, ping_channel: str, pong_channel: str, size: int, count: int) -> list[float]:
    """Round-trip times in seconds of `count` ping-pongs: a pings b, b answers a."""
    ping_sub = b.add_subscription(ping_channel, 2)
    ping_pub = a.add_publication(ping_channel, 2)
    pong_sub = a.add_subscription(pong_channel, 3)
    pong_pub = b.add_publication(pong_channel, 3)
    wait_connected(ping_pub, pong_pub)
    payload = bytes(size)
    got = [0]

    idle = BackoffIdleStrategy(max_park_period_ns=50_000)

    def echo(buf: memoryview, hdr: object) -> None:
        while pong_pub.offer(buf) < 0:
            idle.idle(0)

    def done(buf: memoryview, hdr: object) -> None:
        got[0] += 1

    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        while ping_pub.offer(payload) < 0:
            idle.idle(0)
        idle.reset()
        while not ping_sub.poll(echo, 1):
            idle.idle(0)
        idle.reset()
        while not pong_sub.poll(done, 1):
            idle.idle(0)
        idle.reset()
        times.append(time.perf_counter() - t0)
    for r in (ping_pub, ping_sub, pong_pub, pong_sub):
        r.close()
    return times


async def quic_on_one_loop(size: int, seconds: float, count: int) -> tuple[float, list[float]]:
    """Throughput and RTTs with both drivers on this coroutine's loop (the async users' model)."""
    a = Aeron.connect(Context(counters_interval=0, udp_media="aqueduct"))
    b = Aeron.connect(Context(counters_interval=0, udp_media="aqueduct"))
    try:
        sub = b.add_subscription("aeron:udp?endpoint=localhost:29021", 1)
        pub = a.add_publication("aeron:udp?endpoint=localhost:29021", 1)
        ping_sub = b.add_subscription("aeron:udp?endpoint=localhost:29022", 2)
        ping_pub = a.add_publication("aeron:udp?endpoint=localhost:29022", 2)
        pong_sub = a.add_subscription("aeron:udp?endpoint=localhost:29023", 3)
        pong_pub = b.add_publication("aeron:udp?endpoint=localhost:29023", 3)
        while not (pub.is_connected and ping_pub.is_connected and pong_pub.is_connected):
            await asyncio.sleep(0.001)
        payload = bytes(size)
        received = [0]

        def count_it(buf: memoryview, hdr: object) -> None:
            received[0] += 1

        sent = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            for _ in range(1000):
                if pub.offer(payload) > 0:
                    sent += 1
                else:
                    break
            sub.poll(count_it, 1_000_000)
            await asyncio.sleep(0)
        while received[0] < sent:
            sub.poll(count_it, 1_000_000)
            await asyncio.sleep(0)
        rate = sent / (time.perf_counter() - start)

        def echo(buf: memoryview, hdr: object) -> None:
            pong_pub.offer(buf)

        times = []
        for _ in range(count):
            t0 = time.perf_counter()
            await ping_pub.send(payload)
            while not ping_sub.poll(echo, 1):
                await asyncio.sleep(0)
            while not pong_sub.poll(count_it, 1):
                await asyncio.sleep(0)
            times.append(time.perf_counter() - t0)
        return rate, times
    finally:
        await a.aclose()
        await b.aclose()


def report(name: str, size: int, rate: float, rtt: list[float]) -> None:
    """One line of figures."""
    rtt = sorted(rtt)
    p50, p99 = rtt[len(rtt) // 2] * 1e6, rtt[int(len(rtt) * 0.99)] * 1e6
    print(f"{name:14s} {size} B: offer->poll {rate / 1e6:.3f} M msgs/s ({rate * size / 1e6:.2f} MB/s); "
          f"RTT p50 {p50:.1f} us, p99 {p99:.1f} us, mean {statistics.fmean(rtt) * 1e6:.1f} us", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--rtts", type=int, default=20000)
    parser.add_argument("--channels", default="ipc,udp-loopback,udp-quic,udp-quic-async")
    args = parser.parse_args(argv)
    for name in args.channels.split(","):
        if name == "udp-quic-async":
            rate, rtt = asyncio.run(quic_on_one_loop(args.size, args.seconds, min(args.rtts, 2000)))
            report(name, args.size, rate, rtt)
            continue
        ping, pong, media = CHANNELS[name]
        with Aeron.connect(Context(counters_interval=0, udp_media=media)) as a:
            b = a if ping.startswith("aeron:ipc") else Aeron.connect(Context(counters_interval=0, udp_media=media))
            try:
                rate = throughput(a, b, ping, args.size, args.seconds)
                rtts = args.rtts if media == "loopback" else min(args.rtts, 2000)
                rtt = round_trips(a, b, ping, pong, args.size, rtts)
            finally:
                if b is not a:
                    b.close()
        report(name, args.size, rate, rtt)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

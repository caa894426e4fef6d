"""Engine benchmarks without a network: end-to-end message rate and cascading-loss time.

Two engines are joined by a direct pump (every command delivered at once, in
order), so the figures are the protocol engine's own CPU cost on one core.

    .venv/bin/python benchmarks/engine_bench.py [--messages N] [--depth N]
"""

from __future__ import annotations

import argparse
import time

from aqueduct.core.app import AttachKind, Delivery
from aqueduct.core.engine import Engine
from aqueduct.core.transport import (
    DatagramReceived,
    HandshakeCompleted,
    ResetStream,
    SendDatagram,
    SendStreamData,
    StreamDataReceived,
    StreamReset,
)
from aqueduct.wire.channel_id import Side
from aqueduct.wire.frames import AckNackUnreliable, ChannelControl, encode_frames


def _pump(a: Engine, b: Engine, now: float) -> None:
    for src, dst in ((a, b), (b, a)):
        for cmd in src.commands():
            if isinstance(cmd, SendStreamData):
                dst.handle_event(StreamDataReceived(cmd.stream_id, cmd.data, cmd.end_stream), now)
            elif isinstance(cmd, SendDatagram):
                dst.handle_event(DatagramReceived(cmd.data), now)
            elif isinstance(cmd, ResetStream):
                dst.handle_event(StreamReset(cmd.stream_id, cmd.error_code), now)


def message_rate(n: int, delivery: Delivery, size: int = 64) -> float:
    """Messages per second sent, received, acked and taken, both engines on this core."""
    c, s = Engine(Side.CLIENT), Engine(Side.SERVER)
    s.handle_event(HandshakeCompleted(), 0.0)
    _pump(c, s, 0.0)
    _pump(c, s, 0.0)
    tx, rx = c.entrypoint or 0, s.entrypoint or 0
    payload = b"x" * size
    now = 0.0
    start = time.perf_counter()
    for i in range(n):
        c.send(tx, payload, delivery=delivery, now=now)
        if i % 100 == 99:
            _pump(c, s, now)
            now += 0.001
            s.handle_timer(now)
            c.handle_timer(now)
            while s.take_message(rx) is not None:
                pass
    _pump(c, s, now)
    return n / (time.perf_counter() - start)


def cascade_ms(count: int, deep: bool) -> float:
    """Milliseconds to cascade loss through `count` senders, as a chain (deep) or fan (wide)."""
    c = Engine(Side.CLIENT)
    c.handle_event(StreamDataReceived(0, b""), 0.0)
    (root,) = c.send(c.entrypoint or 0, b"", [AttachKind.RECEIVER], delivery=Delivery.UNRELIABLE).created
    prev = root
    for _ in range(count):
        (prev,) = c.send(prev if deep else root, b"", [AttachKind.RECEIVER]).created
    c.handle_event(StreamDataReceived(1, encode_frames([ChannelControl(0)])), 0.0)
    c.commands()
    c.events()
    start = time.perf_counter()
    c.handle_event(StreamDataReceived(1, encode_frames([AckNackUnreliable((0, 1))])), 0.0)
    took = (time.perf_counter() - start) * 1000
    assert not c.closed and c.state_sizes()["links"] == 0
    return took


def main() -> None:
    """Print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--depth", type=int, default=10_000)
    args = ap.parse_args()
    for mode in (Delivery.ORDERED, Delivery.UNORDERED, Delivery.UNRELIABLE):
        print(f"{mode.value:>10}: {message_rate(args.messages, mode):>9,.0f} msgs/s (64 B, both engines, one core)")
    print(f"cascade {args.depth:,} deep: {cascade_ms(args.depth, True):.1f} ms")
    print(f"cascade {args.depth:,} wide: {cascade_ms(args.depth, False):.1f} ms")


if __name__ == "__main__":
    main()

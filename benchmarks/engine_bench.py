"""Engine benchmarks without a network: message rate with CPU per message at each end, and cascading loss.

Two engines are joined by a direct pump. Stream bytes are re-cut into
1,200-byte chunks per stream (as QUIC packets would deliver them), so the
receiver's cost does not depend on how the sender grouped its writes.
The sender uses `send_many`, the receiver `take_many` (what the API
calls). Each engine's calls are timed apart (CPU time of the blocks that
run it), so the figures are the protocol engine's own cost per message:
"tx" the sending engine, "rx" the receiving engine, msgs/s the pair on one
core. Best of --rounds rounds (least CPU: the figure least disturbed by other load).
"channels": creating a channel (attached to a message), one message on it and
its finish, per channel, both engines including the control streams.

    .venv/bin/python benchmarks/engine_bench.py [--messages N] [--rounds N] [--channels N] [--depth N]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from aqueduct.core.app import AttachKind, Delivery, ReceiverEnded, SenderEnded
from aqueduct.core.engine import Engine
from aqueduct.core.transport import (
    DatagramReceived,
    HandshakeCompleted,
    ResetStream,
    SendDatagram,
    SendStreamData,
    StreamDataReceived,
    StreamReset,
    TransportCommand,
    TransportEvent,
)
from aqueduct.wire.channel_id import Side
from aqueduct.wire.frames import AckNackUnreliable, ChannelControl, encode_frames

CHUNK = 1200
BATCH = 100
CHANNEL_BATCH = 20
_clock: Callable[[], float] = time.process_time


def _events(cmds: list[TransportCommand]) -> list[TransportEvent]:
    """Commands as the peer's events, stream bytes re-cut into CHUNK-byte pieces, streams in the order they were
    first written, then datagrams and resets (not timed)."""
    out: list[TransportEvent] = []
    pending: dict[int, bytearray] = {}
    fins: set[int] = set()
    tail: list[TransportEvent] = []
    for cmd in cmds:
        if isinstance(cmd, SendStreamData):
            pending.setdefault(cmd.stream_id, bytearray()).extend(cmd.data)
            if cmd.end_stream:
                fins.add(cmd.stream_id)
        elif isinstance(cmd, SendDatagram):
            tail.append(DatagramReceived(cmd.data))
        elif isinstance(cmd, ResetStream):
            pending.pop(cmd.stream_id, None)
            tail.append(StreamReset(cmd.stream_id, cmd.error_code))
    for sid, buf in pending.items():
        fin = sid in fins
        for at in range(0, len(buf), CHUNK):
            out.append(StreamDataReceived(sid, bytes(buf[at : at + CHUNK]), fin and at + CHUNK >= len(buf)))
        if fin and not buf:
            out.append(StreamDataReceived(sid, b"", True))
    return out + tail


class _Split:
    """CPU seconds spent inside each engine."""

    def __init__(self) -> None:
        self.tx = 0.0
        self.rx = 0.0

    def pump(self, src: Engine, dst: Engine, now: float, src_is_tx: bool) -> None:
        t0 = _clock()
        cmds = src.commands()
        t1 = _clock()
        events = _events(cmds)
        t2 = _clock()
        for ev in events:
            dst.handle_event(ev, now)
        t3 = _clock()
        if src_is_tx:
            self.tx += t1 - t0
            self.rx += t3 - t2
        else:
            self.rx += t1 - t0
            self.tx += t3 - t2


def message_rate(n: int, delivery: Delivery, size: int = 64) -> tuple[float, float, float]:
    """(msgs/s through both engines, sender-engine us/msg, receiver-engine us/msg): sent, received, acked, taken."""
    c, s = Engine(Side.CLIENT), Engine(Side.SERVER)
    s.handle_event(HandshakeCompleted(), 0.0)
    split = _Split()
    split.pump(c, s, 0.0, True)
    split.pump(s, c, 0.0, False)
    split = _Split()
    tx, rx = c.entrypoint or 0, s.entrypoint or 0
    payload = b"x" * size
    now = 0.0
    for done in range(0, n, BATCH):
        t0 = _clock()
        for _ in range(min(BATCH, n - done)):
            c.send_many(tx, (payload,), delivery, now)
        t1 = _clock()
        split.tx += t1 - t0
        split.pump(c, s, now, True)
        now += 0.001
        t0 = _clock()
        s.handle_timer(now)
        while s.take_many(rx, 64, now):
            pass
        t1 = _clock()
        c.handle_timer(now)
        t2 = _clock()
        split.rx += t1 - t0
        split.tx += t2 - t1
        split.pump(s, c, now, False)
    total = split.tx + split.rx
    return n / total, split.tx / n * 1e6, split.rx / n * 1e6


def channel_rate(n: int) -> tuple[float, float, float]:
    """(channels/s through both engines, sender-engine us/channel, receiver-engine us/channel): a message attaching
    a new channel's receiver, one 64 B message on that channel, finish; the receiver takes both, the channel
    closes (control stream both ways) and both sides drop its handles."""
    c, s = Engine(Side.CLIENT), Engine(Side.SERVER)
    s.handle_event(HandshakeCompleted(), 0.0)
    split = _Split()
    split.pump(c, s, 0.0, True)
    split.pump(s, c, 0.0, False)
    split = _Split()
    tx, rx = c.entrypoint or 0, s.entrypoint or 0
    payload = b"x" * 64
    now = 0.0
    for done in range(0, n + 10 * CHANNEL_BATCH, CHANNEL_BATCH):  # (the last ten batches: time for the last acks)
        t0 = _clock()
        for _ in range(max(0, min(CHANNEL_BATCH, n - done))):
            (new,) = c.send(tx, b"", [AttachKind.RECEIVER], now=now).created
            c.send_many(new, (payload,), Delivery.ORDERED, now)
            c.finish(new, now)
        split.tx += _clock() - t0
        for _ in range(3):  # message, ChannelControl, FinishSender, CloseReceiver
            split.pump(c, s, now, True)
            now += 0.001 if done < n else 0.01
            t0 = _clock()
            s.handle_timer(now)
            for d in s.take_many(rx, 1000, now):
                for att in d.attachments:
                    s.take_many(att.handle, 64, now)
            for ev in s.events():
                if isinstance(ev, ReceiverEnded):
                    s.drop_receiver(ev.receiver, now)
            t1 = _clock()
            c.handle_timer(now)
            for ev in c.events():
                if isinstance(ev, SenderEnded):
                    c.drop_sender(ev.sender, now)
            t2 = _clock()
            split.rx += t1 - t0
            split.tx += t2 - t1
            split.pump(s, c, now, False)
    assert c.state_sizes()["senders"] == 1 and s.state_sizes()["receivers"] == 1, (c.state_sizes(), s.state_sizes())
    total = split.tx + split.rx
    return n / total, split.tx / n * 1e6, split.rx / n * 1e6


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
    ap.add_argument("--messages", type=int, default=50_000, help="64 B messages per round (16 KiB: a tenth)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--depth", type=int, default=10_000)
    ap.add_argument("--channels", type=int, default=5_000, help="channels created per round")
    args = ap.parse_args()
    cases = [(m, 64, args.messages) for m in (Delivery.ORDERED, Delivery.UNORDERED, Delivery.UNRELIABLE)]
    cases += [(m, 16384, max(1, args.messages // 10)) for m in (Delivery.ORDERED, Delivery.UNORDERED)]
    for mode, size, n in cases:
        runs = [message_rate(n, mode, size) for _ in range(args.rounds)]
        rate, tx_us, rx_us = max(r[0] for r in runs), min(r[1] for r in runs), min(r[2] for r in runs)
        print(f"{mode.value:>10} {size:>5} B: {rate:>9,.0f} msgs/s  tx {tx_us:6.2f} us/msg  rx {rx_us:6.2f} us/msg")
    runs = [channel_rate(args.channels) for _ in range(args.rounds)]
    rate, tx_us, rx_us = max(r[0] for r in runs), min(r[1] for r in runs), min(r[2] for r in runs)
    print(f"{'channels':>10} {64:>5} B: {rate:>9,.0f} chans/s  tx {tx_us:6.2f} us/ch   rx {rx_us:6.2f} us/ch")
    print(f"cascade {args.depth:,} deep: {cascade_ms(args.depth, True):.1f} ms")
    print(f"cascade {args.depth:,} wide: {cascade_ms(args.depth, False):.1f} ms")


if __name__ == "__main__":
    main()

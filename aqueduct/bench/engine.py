"""Engine-only costs (no sockets, no asyncio): two engines joined by a direct in-memory relay.

- cascade: a tree of N channels hangs off one unreliable message; the time
  one nack of that message takes to end every channel in the tree (LOST).
- memory per idle channel: bytes traced (tracemalloc) by both engines for N
  channels that are open and idle (sender on one side, receiver on the
  other, nothing in flight), divided by N.
- throughput vs open channels: 64 B ordered messages through the pair
  (send, relay, take, relay the acks back) while K idle channels are open.

The relay turns each side's commands into the other side's events at once
(no flow control, no loss), joining consecutive writes to one stream as the
adapter does; a skewable clock fires the engines' timers.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from dataclasses import dataclass, field

from ..core.app import AttachKind, Delivery, HeadersReceived, SenderEnded
from ..core.config import EngineConfig
from ..core.engine import Engine
from ..core.transport import (
    DatagramReceived,
    HandshakeCompleted,
    ResetStream,
    SendDatagram,
    SendStreamData,
    StopSending,
    StopSendingReceived,
    StreamDataReceived,
    StreamReset,
)
from ..errors import EndReason
from ..wire.channel_id import Side
from ..wire.frames import AckNackUnreliable, ChannelControl, ConnectionControl, Version, encode_frames

ATTACH_PER_MESSAGE = 100
ROOMY = EngineConfig(max_channels=1_000_000, max_pending_receivers=1_000_000)


class Clock:
    """Real time plus a skew that `advance` grows (to fire timers without waiting)."""

    def __init__(self) -> None:
        self.skew = 0.0

    def now(self) -> float:
        return time.perf_counter() + self.skew

    def advance(self, seconds: float) -> None:
        self.skew += seconds


def _relay(src: Engine, dst: Engine, now: float) -> int:
    cmds = src.commands()
    # consecutive writes to one stream are joined as the adapter joins them (quic/writes.py: one run held, a FIN
    # ends it and rides on it, any other command lets it go first)
    held_sid: int | None = None
    held: list[bytes] = []
    for cmd in cmds:
        if type(cmd) is SendStreamData:
            sid = cmd.stream_id
            if sid == held_sid:
                held.append(cmd.data)
                if cmd.end_stream:
                    dst.handle_event(StreamDataReceived(sid, b"".join(held), True), now)
                    held_sid = None
                continue
            if held_sid is not None:
                dst.handle_event(StreamDataReceived(held_sid, b"".join(held)), now)
            held_sid, held = sid, [cmd.data]
            if cmd.end_stream:
                dst.handle_event(StreamDataReceived(sid, cmd.data, True), now)
                held_sid = None
            continue
        if held_sid is not None:
            dst.handle_event(StreamDataReceived(held_sid, b"".join(held)), now)
            held_sid = None
        if isinstance(cmd, SendDatagram):
            dst.handle_event(DatagramReceived(cmd.data), now)
        elif isinstance(cmd, ResetStream):
            dst.handle_event(StreamReset(cmd.stream_id, cmd.error_code), now)
        elif isinstance(cmd, StopSending):
            dst.handle_event(StopSendingReceived(cmd.stream_id, cmd.error_code), now)
    if held_sid is not None:
        dst.handle_event(StreamDataReceived(held_sid, b"".join(held)), now)
    return len(cmds)


@dataclass
class Pair:
    """A connected client and server engine with a relay between them."""

    clock: Clock = field(default_factory=Clock)
    client: Engine = field(init=False)
    server: Engine = field(init=False)
    server_entry: int = 0

    def __post_init__(self) -> None:
        now = self.clock.now()
        self.client = Engine(Side.CLIENT, config=ROOMY, now=now)
        self.server = Engine(Side.SERVER, config=ROOMY, now=now)
        self.client.handle_event(HandshakeCompleted(), now)
        self.server.handle_event(HandshakeCompleted(), now)
        self.settle()
        for ev in self.server.events():
            if isinstance(ev, HeadersReceived) and ev.entrypoint is not None:
                self.server_entry = ev.entrypoint
        self.client.events()

    def pump(self) -> None:
        """Relay both ways until quiet; fire due timers."""
        c, s = self.client, self.server
        while True:
            now = self.clock.now()
            for e in (c, s):
                deadline = e.next_deadline()
                if deadline is not None and deadline <= now:
                    e.handle_timer(now)
            if not (_relay(c, s, now) + _relay(s, c, now)):
                return

    def settle(self) -> None:
        """Pump, and jump the clock to each pending deadline until no timer is left."""
        for _ in range(100):
            self.pump()
            deadlines = [d for d in (self.client.next_deadline(), self.server.next_deadline()) if d is not None]
            if not deadlines:
                return
            self.clock.advance(max(0.0, min(deadlines) - self.clock.now()) + 1e-6)

    def open_idle(self, count: int) -> tuple[list[int], list[int]]:
        """`count` new channels, client sender to server receiver; returns their handles (senders, receivers)."""
        c, s = self.client, self.server
        entry = c.entrypoint
        assert entry is not None
        senders: list[int] = []
        receivers: list[int] = []
        while len(senders) < count:
            k = min(ATTACH_PER_MESSAGE, count - len(senders))
            senders.extend(c.send(entry, b"", [AttachKind.RECEIVER] * k, now=self.clock.now()).created)
            self.pump()
            while (d := s.take_message(self.server_entry, now=self.clock.now())) is not None:
                receivers.extend(a.handle for a in d.attachments)
        self.settle()
        c.events()
        s.events()
        return senders, receivers


def idle_channel_bytes(count: int) -> float:
    """Bytes per open idle channel, both engines together (tracemalloc over creating them)."""
    pair = Pair()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    handles = pair.open_idle(count)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert len(handles[1]) == count
    return used / count


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def throughput_vs_channels(counts: list[int], messages: int) -> tuple[list[tuple[int, float]], float]:
    """(open channels, msgs/s) for each count, growing one pair's idle channels from count to count; and the
    resident memory per channel added over the last step (RSS growth / channels added; both engines). The rate
    is of messages the receiving engine handed out (counted there), not of messages sent."""
    curve, per_channel, _ = _throughput(counts, messages)
    return curve, per_channel


def _throughput(counts: list[int], messages: int) -> tuple[list[tuple[int, float]], float, list[tuple[int, int]]]:
    """`throughput_vs_channels`, and per count (messages sent, messages the receiving engine handed out)."""
    pair = Pair()
    c, s = pair.client, pair.server
    ([tx], [rx]) = pair.open_idle(1)  # the measured channel
    opened = 0
    out: list[tuple[int, float]] = []
    payload = b"x" * 64
    per_channel = 0.0
    counted: list[tuple[int, int]] = []
    for target in counts:
        gc.collect()
        before = _rss()
        pair.open_idle(target - opened)
        gc.collect()
        if target > opened:
            per_channel = (_rss() - before) / (target - opened)
        opened = target
        gc.collect()
        start = time.perf_counter()
        sent = got = 0
        while sent < messages:
            now = pair.clock.now()
            for _ in range(256):
                c.send(tx, payload, now=now)
            sent += 256
            pair.pump()
            now = pair.clock.now()
            while s.take_message(rx, now=now) is not None:
                got += 1
            pair.pump()
            c.events()
            s.events()
        out.append((target, got / (time.perf_counter() - start)))
        counted.append((sent, got))
    return out, per_channel, counted


def main() -> None:
    """Run every engine-only measurement and print one JSON object (run in a fresh process: RSS is ours)."""
    import argparse
    import json

    parser = argparse.ArgumentParser()
    parser.add_argument("--channels", type=int, default=100_000)
    parser.add_argument("--cascade", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--traced", type=int, default=10_000)
    args = parser.parse_args()
    took, lost = cascade_seconds(args.cascade)
    counts = [n for n in (10, 100, 1_000, 10_000, 100_000, 1_000_000) if n < args.channels] + [args.channels]
    curve, rss_per_channel = throughput_vs_channels(counts, args.messages)
    out = {
        "cascade_channels": args.cascade,
        "cascade_ms": took * 1000,
        "cascade_lost": lost,
        "idle_channel_bytes_traced": idle_channel_bytes(args.traced),
        "idle_channel_bytes_traced_count": args.traced,
        "idle_channel_bytes_rss": rss_per_channel,
        "idle_channel_bytes_rss_count": args.channels,
        "throughput_vs_channels": curve,
    }
    print(json.dumps(out))


def _hello() -> bytes:
    return encode_frames([Version(), ConnectionControl(())])


def cascade_seconds(count: int) -> tuple[float, int]:
    """(seconds for one nack to end a tree of `count` channels, channels that ended LOST)."""
    c = Engine(Side.CLIENT, config=ROOMY)
    c.handle_event(HandshakeCompleted(), 0.0)
    c.handle_event(StreamDataReceived(0, _hello()), 0.0)
    (root,) = c.send(c.entrypoint or 0, b"root", [AttachKind.RECEIVER], Delivery.UNRELIABLE, now=0.0).created
    tree = [root]
    i = 0
    while len(tree) < count:
        k = min(10, count - len(tree))
        tree.extend(c.send(tree[i], b"", [AttachKind.RECEIVER] * k, now=0.0).created)
        i += 1
    c.commands()
    c.events()
    nack = StreamDataReceived(1, encode_frames([ChannelControl(0), AckNackUnreliable((0, 1))]))
    gc.collect()
    start = time.perf_counter()
    c.handle_event(nack, 0.0)
    took = time.perf_counter() - start
    lost = sum(1 for e in c.events() if isinstance(e, SenderEnded) and e.reason is EndReason.LOST)
    return took, lost


if __name__ == "__main__":
    main()

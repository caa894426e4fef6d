"""A deterministic simulated network for the sans-I/O Aeron publisher and receivers.

Datagrams get a seeded delay (jitter reorders them) and a seeded chance of
loss; a virtual clock ticks every `tick_ns`, running every node's timers and
delivering what is due. No wall time anywhere.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from aeron_compat.native.frames import Flags
from aeron_compat.native.image import Header
from aeron_compat.native.publisher import Publisher
from aeron_compat.native.receiver import Receiver

Address = tuple[str, int]
PUB: Address = ("10.0.0.1", 40000)
SUB: Address = ("10.0.0.2", 40001)
SUB2: Address = ("10.0.0.3", 40002)


@dataclass
class SimNet:
    """Virtual clock plus lossy, reordering links between named addresses."""

    seed: int = 0
    loss: float = 0.0
    delay_ns: int = 50_000
    jitter_ns: int = 0
    tick_ns: int = 1_000_000
    now: int = 0
    publisher: Publisher | None = None
    pub_address: Address = PUB
    receivers: dict[Address, Receiver] = field(default_factory=dict)
    sent: list[tuple[bytes, Address, Address]] = field(default_factory=list)
    drop: Callable[[bytes, Address, Address], bool] | None = None
    _queue: list[tuple[int, int, bytes, Address, Address]] = field(default_factory=list)
    _seq: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def _send(self, data: bytes, src: Address, dst: Address) -> None:
        self.sent.append((data, src, dst))
        if self.drop is not None and self.drop(data, src, dst):
            return
        if self.rng.random() < self.loss:
            return
        at = self.now + self.delay_ns + (self.rng.randrange(self.jitter_ns) if self.jitter_ns else 0)
        self._seq += 1
        heapq.heappush(self._queue, (at, self._seq, data, src, dst))

    def flush(self) -> None:
        """Move every node's outbox onto the wire."""
        if self.publisher is not None:
            for data, dst in self.publisher.outbox:
                self._send(data, self.pub_address, dst)
            self.publisher.outbox.clear()
        for addr, rec in self.receivers.items():
            for data, dst in rec.outbox:
                self._send(data, addr, dst)
            rec.outbox.clear()

    def _deliver_due(self) -> None:
        while self._queue and self._queue[0][0] <= self.now:
            _, _, data, src, dst = heapq.heappop(self._queue)
            if dst == self.pub_address and self.publisher is not None:
                self.publisher.on_datagram(data, src, self.now)
            elif dst in self.receivers:
                self.receivers[dst].on_datagram(data, src, self.now)
            self.flush()

    def tick(self) -> None:
        """Advance one tick: deliver due datagrams, run timers, send."""
        self.now += self.tick_ns
        self._deliver_due()
        if self.publisher is not None:
            self.publisher.on_timer(self.now)
        for rec in self.receivers.values():
            rec.on_timer(self.now)
        self.flush()

    def run_until(self, done: Callable[[], bool], max_ticks: int = 20_000) -> int:
        """Tick until `done()`; returns the ticks taken (fails the test if it never happens)."""
        for n in range(max_ticks):
            if done():
                return n
            self.tick()
        raise AssertionError(f"condition not reached in {max_ticks} ticks")


@dataclass
class Collector:
    """A fragment handler that reassembles messages by B/E flags and records fragments."""

    messages: list[bytes] = field(default_factory=list)
    fragments: list[tuple[int, int]] = field(default_factory=list)
    _partial: bytearray | None = None

    def __call__(self, buf: memoryview, header: Header) -> None:
        self.fragments.append((header.flags, len(buf)))
        if header.flags & Flags.BEGIN:
            self._partial = bytearray()
        if self._partial is None:
            return
        self._partial += buf
        if header.flags & Flags.END:
            self.messages.append(bytes(self._partial))
            self._partial = None


def message(i: int, size: int) -> bytes:
    """A deterministic payload of `size` bytes identifying message `i`."""
    head = i.to_bytes(4, "little")
    return (head * (size // 4 + 1))[:size]

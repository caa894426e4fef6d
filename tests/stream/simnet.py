"""A deterministic simulated network between sans-I/O Stream endpoints.

Each datagram gets a seeded delay (jitter reorders), a seeded chance of loss
and of duplication, and an optional `drop` predicate for scripted losses. The
virtual clock jumps to the next delivery or endpoint timer; no wall time.
Optionally each sender's link has a rate (bytes per second) and a drop-tail
queue, and endpoint timers fire no sooner than a granularity after they are
armed (as asyncio's epoll rounds a wait up to whole milliseconds).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from aeron_compat.marlin.connection import Address
from aeron_compat.marlin.endpoint import Endpoint
from aeron_compat.marlin.limits import MS

A: Address = ("10.0.0.1", 5000)
B: Address = ("10.0.0.2", 6000)


@dataclass
class SimNet:
    """Virtual clock plus impaired links between named endpoints."""

    seed: int = 0
    loss: float = 0.0
    dup: float = 0.0
    delay_ns: int = 5 * MS
    jitter_ns: int = 0
    now: int = 0
    nodes: dict[Address, Endpoint] = field(default_factory=dict)
    drop: Callable[[bytes, Address, Address], bool] | None = None
    sent: list[tuple[bytes, Address, Address]] = field(default_factory=list)
    app: Callable[[], None] | None = None  # an application step, run every `app_period_ns`
    app_period_ns: int = 1_000_000
    rate: float = 0.0  # bytes per second per sender (0: unlimited)
    queue_bytes: int = 1 << 62  # a sender's link queue beyond which datagrams are dropped
    timer_granularity_ns: int = 0
    _link_free: dict[Address, int] = field(default_factory=dict)
    _next_app: int = 0
    _queue: list[tuple[int, int, bytes, Address, Address]] = field(default_factory=list)
    _seq: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def add(self, addr: Address, endpoint: Endpoint) -> Endpoint:
        self.nodes[addr] = endpoint
        return endpoint

    def _send(self, data: bytes, src: Address, dst: Address) -> None:
        self.sent.append((data, src, dst))
        if self.drop is not None and self.drop(data, src, dst):
            return
        if self.rng.random() < self.loss:
            return
        copies = 2 if self.rng.random() < self.dup else 1
        start = self.now
        if self.rate:
            start = max(self._link_free.get(src, 0), self.now)
            if (start - self.now) * self.rate / 1e9 > self.queue_bytes:
                return
            start += int(len(data) / self.rate * 1e9)
            self._link_free[src] = start
        for _ in range(copies):
            at = start + self.delay_ns + (self.rng.randrange(self.jitter_ns) if self.jitter_ns else 0)
            self._seq += 1
            heapq.heappush(self._queue, (at, self._seq, data, src, dst))

    def flush(self) -> None:
        for addr, ep in self.nodes.items():
            for data, dst in ep.transmit(self.now):
                self._send(data, addr, dst)

    def step(self) -> bool:
        """Advance to the next due thing; False when nothing at all is pending."""
        self.flush()
        times = [self._queue[0][0]] if self._queue else []
        if self.app is not None:
            times.append(self._next_app)
        for ep in self.nodes.values():
            t = ep.next_timer(self.now)
            if t is not None:
                g = self.timer_granularity_ns
                if g and t > self.now:
                    t = self.now + -(-(t - self.now) // g) * g
                times.append(t)
        if not times:
            return False
        self.now = max(self.now, min(times))
        while self._queue and self._queue[0][0] <= self.now:
            _, _, data, src, dst = heapq.heappop(self._queue)
            if dst in self.nodes:
                self.nodes[dst].receive(data, src, self.now)
        for ep in self.nodes.values():
            ep.on_timer(self.now)
        if self.app is not None and self.now >= self._next_app:
            self._next_app = self.now + self.app_period_ns
            self.app()
        self.flush()
        return True

    def run_until(self, done: Callable[[], bool], limit_ns: int = 120_000 * MS) -> None:
        """Step until `done()` (asserting it happens before `limit_ns` of virtual time)."""
        end = self.now + limit_ns
        while not done():
            assert self.now < end, "simulation did not converge"
            if not self.step():
                assert done(), "simulation went idle before converging"
                return

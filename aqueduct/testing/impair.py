"""A seeded UDP impairment proxy for loss curves (`aqueduct bench --loss-curves`) and loopback tests of real QUIC.

`ImpairProxy` listens on a loopback port and relays datagrams to a target
(the server), one upstream socket per client address so replies find their
way back. Each datagram, in each direction, passes one `Impairment`: it may
be dropped (independently, or in bursts by a two-state Gilbert-Elliott
chain), duplicated, delayed (base + jitter), or held back extra so later
datagrams overtake it (reordering). `blackout(seconds)` drops everything in
both directions for a while. All decisions come from one `random.Random`
per direction seeded from `seed`, so a run's choices replay exactly for the
same arrival order. Counters in `stats` say what happened.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

Address = tuple[str, int]


@dataclass(frozen=True)
class Impairment:
    """What one direction of the proxy does to datagrams (probabilities are per datagram)."""

    loss: float = 0.0
    """Independent drop probability (in the good state of the burst chain)."""
    burst_enter: float = 0.0
    """Probability of entering a loss burst at each datagram."""
    burst_exit: float = 0.3
    """Probability of leaving a burst at each datagram while in one."""
    burst_loss: float = 0.9
    """Drop probability inside a burst."""
    duplicate: float = 0.0
    """Probability that a forwarded datagram is sent twice."""
    reorder: float = 0.0
    """Probability that a datagram is held `reorder_delay` extra, letting later ones pass it."""
    reorder_delay: float = 0.01
    delay: float = 0.0
    """Base one-way delay in seconds."""
    jitter: float = 0.0
    """Uniform extra delay in [0, jitter) seconds."""


@dataclass
class DirectionStats:
    """Counts of one direction."""

    received: int = 0
    dropped: int = 0
    duplicated: int = 0
    reordered: int = 0
    forwarded: int = 0
    blacked_out: int = 0


@dataclass
class ProxyStats:
    """Counts of both directions."""

    up: DirectionStats = field(default_factory=DirectionStats)
    """Client to server."""
    down: DirectionStats = field(default_factory=DirectionStats)
    """Server to client."""


class _Direction:
    """The seeded decision state of one direction."""

    def __init__(self, imp: Impairment, seed: int, stats: DirectionStats) -> None:
        self.imp = imp
        self.rng = random.Random(seed)
        self.stats = stats
        self.in_burst = False

    def plan(self) -> list[float]:
        """Delays at which copies of the next datagram go out (empty: dropped)."""
        imp, rng = self.imp, self.rng
        self.stats.received += 1
        if self.in_burst:
            self.in_burst = rng.random() >= imp.burst_exit
        else:
            self.in_burst = rng.random() < imp.burst_enter
        p = imp.burst_loss if self.in_burst else imp.loss
        if rng.random() < p:
            self.stats.dropped += 1
            return []
        copies = 1
        if rng.random() < imp.duplicate:
            copies = 2
            self.stats.duplicated += 1
        delays = []
        for _ in range(copies):
            d = imp.delay + (rng.random() * imp.jitter if imp.jitter else 0.0)
            if rng.random() < imp.reorder:
                d += imp.reorder_delay
                self.stats.reordered += 1
            delays.append(d)
        return delays


class _Upstream(asyncio.DatagramProtocol):
    """The proxy's socket towards the target for one client address."""

    def __init__(self, proxy: ImpairProxy, client: Address) -> None:
        self.proxy = proxy
        self.client = client
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: Address) -> None:
        self.proxy._relay(self.proxy._down, data, lambda d: self.proxy._send_down(d, self.client))


class ImpairProxy(asyncio.DatagramProtocol):
    """A loopback UDP proxy that impairs traffic between clients and one target."""

    def __init__(
        self, target: Address, *, up: Impairment | None = None, down: Impairment | None = None, seed: int = 0
    ) -> None:
        self.target = target
        self.stats = ProxyStats()
        self._up = _Direction(up or Impairment(), seed * 2 + 1, self.stats.up)
        self._down = _Direction(down or Impairment(), seed * 2 + 2, self.stats.down)
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.DatagramTransport | None = None
        self._upstreams: dict[Address, _Upstream] = {}
        self._pending: dict[Address, list[bytes]] = {}
        self._blackout_until = 0.0
        self.address: Address = ("127.0.0.1", 0)
        self.recorded: list[bytes] = []
        """Client-to-server datagrams as they arrived, kept while `record` is on (e.g. to replay them)."""
        self.record = False

    @classmethod
    async def start(
        cls, target: Address, *, up: Impairment | None = None, down: Impairment | None = None, seed: int = 0,
        host: str = "127.0.0.1", port: int = 0,
    ) -> ImpairProxy:
        """Listen on host:port (0: any free port; see `.address`) and relay to `target`."""
        loop = asyncio.get_running_loop()
        proxy = cls(target, up=up, down=down, seed=seed)
        await loop.create_datagram_endpoint(lambda: proxy, local_addr=(host, port))
        return proxy

    def set_impairment(self, *, up: Impairment | None = None, down: Impairment | None = None) -> None:
        """Change the impairment of a direction from now on (the random streams continue)."""
        if up is not None:
            self._up.imp = up
        if down is not None:
            self._down.imp = down

    def blackout(self, seconds: float) -> None:
        """Drop every datagram in both directions for `seconds` from now."""
        self._blackout_until = max(self._blackout_until, self._loop.time() + seconds)

    @property
    def blacked_out(self) -> bool:
        """Whether a blackout is in force."""
        return self._loop.time() < self._blackout_until

    def drop_clients(self) -> None:
        """Close the upstream sockets of every client seen so far (between connections of a long run)."""
        for up in self._upstreams.values():
            if up.transport is not None:
                up.transport.close()
        self._upstreams.clear()

    def close(self) -> None:
        """Stop relaying and close every socket."""
        self.drop_clients()
        if self._transport is not None:
            self._transport.close()

    # ---- asyncio protocol ----
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.DatagramTransport, transport)
        sockname = transport.get_extra_info("sockname")
        self.address = (sockname[0], sockname[1])

    def datagram_received(self, data: bytes, addr: Address) -> None:
        if self.record:
            self.recorded.append(data)
        self._relay(self._up, data, lambda d: self._send_up(d, addr))

    # ---- relaying ----
    def _relay(self, direction: _Direction, data: bytes, send: Callable[[bytes], None]) -> None:
        if self.blacked_out:
            direction.stats.received += 1
            direction.stats.blacked_out += 1
            return
        for delay in direction.plan():
            direction.stats.forwarded += 1
            if delay <= 0:
                send(data)
            else:
                self._loop.call_later(delay, send, data)

    def _send_down(self, data: bytes, client: Address) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.sendto(data, client)

    def _send_up(self, data: bytes, client: Address) -> None:
        up = self._upstreams.get(client)
        if up is not None and up.transport is not None:
            if not up.transport.is_closing():
                up.transport.sendto(data)
            return
        queued = self._pending.get(client)
        if queued is not None:  # the upstream socket is being made
            queued.append(data)
            return
        self._pending[client] = [data]
        self._loop.create_task(self._open_upstream(client))

    async def _open_upstream(self, client: Address) -> None:
        _, up = await self._loop.create_datagram_endpoint(
            lambda: _Upstream(self, client), remote_addr=self.target
        )
        self._upstreams[client] = up
        assert up.transport is not None
        for data in self._pending.pop(client, []):
            up.transport.sendto(data)

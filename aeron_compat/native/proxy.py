"""A UDP impairment proxy for interop tests: seeded datagram loss between two Aeron peers.

Theory: the sender side talks to the proxy's `front` socket as if it were the
endpoint; the proxy forwards to `target` from its `back` socket, so the
receiver answers (SM, NAK, RTTM) to `back`, and those go out of `front` to
the last address that sent to it. Each forwarded datagram is dropped with
probability `loss` (seeded) or when `drop(direction, data)` says so, and optionally recorded, which is how real
drivers' frames are captured for the codec vectors.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from aeron_compat.native.driver import Host, NativeDriver

Address = tuple[str, int]


@dataclass
class _Side:
    """One socket of the proxy, as a machine a `Host` can run."""

    proxy: ImpairmentProxy
    is_front: bool
    outbox: list[tuple[bytes, Address]] = field(default_factory=list)

    def on_datagram(self, data: bytes, source: Address, now: int) -> None:
        self.proxy.forward(self, data, source)

    def on_timer(self, now: int) -> None:
        """No timers."""


class ImpairmentProxy:
    """Forwards datagrams both ways between a client and `target`, dropping some."""

    def __init__(self, driver: NativeDriver, target: Address, loss: float = 0.0, seed: int = 0,
                 record: bool = False, bind: Address = ("127.0.0.1", 0),
                 drop: Callable[[str, bytes], bool] | None = None) -> None:
        self.target = target
        self.drop = drop
        self.loss = loss
        self.rng = random.Random(seed)
        self.record = record
        self.recorded: list[tuple[str, bytes]] = []
        self.forwarded = self.dropped = 0
        self.client: Address | None = None
        self._front = _Side(self, True)
        self._back = _Side(self, False)
        self.front = driver.open(Host(driver, self._front), bind)
        self.back = driver.open(Host(driver, self._back), ("127.0.0.1", 0))

    @property
    def address(self) -> Address:
        """Where the client should send (the proxy's front socket)."""
        return self.front.local_address

    def forward(self, side: _Side, data: bytes, source: Address) -> None:
        """Called on the driver thread for every datagram either socket receives."""
        if side.is_front:
            self.client = source
            out, dest, direction = self._back, self.target, "to_target"
        elif self.client is not None:
            out, dest, direction = self._front, self.client, "to_client"
        else:
            return
        if self.record:
            self.recorded.append((direction, data))
        if (self.loss and self.rng.random() < self.loss) or (self.drop is not None and self.drop(direction, data)):
            self.dropped += 1
            return
        self.forwarded += 1
        out.outbox.append((data, dest))

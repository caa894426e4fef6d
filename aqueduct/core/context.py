"""What every part of one engine shares: configuration, side, clock, the outbox and the timers.

The engine (engine.py) is made of parts that each own one concern (see its
docstring); they share this one object instead of each other's fields.
`now`, `rtt` and `closed` are written by the engine facade only: `now`
moves forward with every call that brings a time (time never goes back),
`rtt` follows the transport's estimate, and `closed` is set once, by the
teardown. Every part reads them here. The outbox (outbox.py) and the
timers (timers.py) are objects with their own rules; the parts emit into
the one and arm keys in the other.

Spec: none (engine plumbing).
"""

from __future__ import annotations

from ..wire.channel_id import Side
from .config import EngineConfig
from .outbox import Outbox
from .timers import Timers


class Context:
    """One engine's shared, read-mostly state."""

    __slots__ = ("closed", "config", "now", "out", "rtt", "side", "timers")

    def __init__(self, side: Side, config: EngineConfig, now: float) -> None:
        self.side = side
        self.config = config
        self.now = now
        """The latest time the engine was given (seconds, the caller's clock)."""
        self.rtt = config.initial_rtt
        """The transport's smoothed RTT estimate (seconds)."""
        self.closed = False
        """The connection is over: parts stop emitting and stop walking their tables."""
        self.out = Outbox()
        self.timers = Timers()

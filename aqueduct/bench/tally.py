"""What a bench server saw, counted on its side: how the row tests prove what each row measures.

A row's figure is computed on the measuring side (calls/s from the latencies it timed, msgs/s from a count
the server replied); a row that drove the wrong workload (say, requests on a pre-opened channel pair where
its name says a fresh oneshot per call) still prints a plausible figure. Every bench server keeps a `Tally`
(the peers in their `Served`, Aqueduct's command server in `aqserver.accept(tally=)`), and the tests of
tests/bench/ compare it with what the row reports: calls answered, channels the client opened, messages
received, client connections and how each began. Counting is a few integer additions per call or per
workload (a sink adds its count once, at its end), the same for every server (decision PERF-37).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Tally:
    """Counts of one bench server, from the server's side."""

    calls: int = 0
    """Request/reply calls answered."""
    channels: int = 0
    """(Aqueduct) Halves that arrived attached to a message on the entrypoint: each a channel the client opened."""
    commands: Counter[bytes] = field(default_factory=Counter)
    """(Aqueduct) Bench commands received, by command byte (protocol.py)."""
    messages: int = 0
    """Messages a one-way sink counted, or an echo sent back (added when the sink or echo ends)."""
    connections: list[Any] = field(default_factory=list)
    """One entry per client connection the server saw (Aqueduct: the Connection, whose `zero_rtt` says whether it
    began in 0-RTT; the other peers: the client's address or identity), when `keep`."""
    accepted: int = 0
    """Client connections the server accepted (counted whether or not `keep`)."""
    keep: bool = True
    """Whether `connections` keeps each one (a server measuring its memory per connection counts them only)."""

    def connected(self, connection: Any) -> None:
        """One more client connection."""
        self.accepted += 1
        if self.keep:
            self.connections.append(connection)

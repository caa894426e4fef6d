"""A server socket's burst of datagrams: each connection handles its events once, after the burst.

The server reads every datagram waiting on its socket per readiness event (drain.py). While a `Burst` is
open, a connection given a datagram only feeds it to aioquic and joins the burst; when the server has
handed over the last datagram it closes the burst, and each connection that joined processes its events
and schedules its transmit once, in the order they joined (a client does the same for its own socket's
bursts). So a burst of N datagrams for one connection costs one pass of events through the engine, one
pump and one transmit, not N.

A joiner's `end_burst` never raises: a connection whose events fail to be handled closes itself (protocol.py,
INTERNAL_ERROR), so one faulty connection cannot keep the others of its burst from theirs.
"""

from __future__ import annotations

from typing import Protocol


class Joiner(Protocol):
    """A connection that can take part in a burst."""

    def end_burst(self) -> None:
        """The burst it joined ended: handle the events of its datagrams and schedule a transmit (never raises)."""


class Burst:
    """The datagrams one server socket read in one readiness event: while `open`, a connection given one only
    feeds it to aioquic and joins; when the burst ends each joined connection handles its events and
    transmits once (as a client does for its own socket's bursts, drain.py)."""

    __slots__ = ("joined", "open")

    def __init__(self) -> None:
        self.open = False
        self.joined: dict[Joiner, None] = {}

    def close(self) -> None:
        """The burst ended: each connection that got datagrams in it handles their events now, in order."""
        self.open = False
        joined, self.joined = self.joined, {}
        for protocol in joined:
            protocol.end_burst()

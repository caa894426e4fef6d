# The `Transport` interface: what a driver network (network.py) needs of the wire between two drivers.
#
# The network is transport-neutral: which driver serves an endpoint and which dials it, the reg / unreg /
# setup control messages, matching, re-dialling, the sessions' bookkeeping and shutdown.  A transport
# supplies only the connection-shaped parts:
#   listen / greet  serve `host:port`, and turn a peer's first contact ("hello") into a link;
#   dial            connect to an endpoint, as a link whose "hello" is queued;
#   a link          a `ControlLink` (link.py): ordered control messages both ways on one connection;
#   sink_type       the publication side of a session: a `RemoteSink` (sessions.py) sending a log's frames
#                   and reading the subscriber's positions back;
#   session_type    the subscription side: a `SessionCore` (sessions.py) reading batches into an image and
#                   reporting its position; check_setup / refuse_setup vet and release what a "setup"
#                   message carries for it (Aqueduct: two channel halves; Marlin Stream: a stream).
# Two transports implement it, each in modules of its own that import nothing of the other:
# aqueduct.py (+ aqueduct_link.py, aqueduct_session.py: Aqueduct over QUIC, TLS) and marlin.py
# (+ marlin_link.py, marlin_session.py: Marlin Stream over UDP, no TLS).  A third implements this
# Protocol and is handed to `DriverNetwork`; nothing else changes.
"""`Transport` and `Listening`: the interface between the driver network and a transport."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from .link import ControlLink, OnControl
from .sessions import RemoteSink, SessionCore


@dataclass
class Listening:
    """A served endpoint: the port it got, and its peers' connections as they arrive (until it closes)."""

    port: int
    peers: AsyncIterator[Any]


class Transport(Protocol):
    """How drivers reach each other: what `DriverNetwork` asks of one transport (see the module comment)."""

    @property
    def sink_type(self) -> type[RemoteSink]:
        """What sends a local log's frames to a remote subscriber known on a link of this transport."""

    @property
    def session_type(self) -> type[SessionCore]:
        """What feeds a local image from a remote publication; built as `session_type(net, link, sub, msg)`."""

    async def listen(self, host: str, port: int, stack: contextlib.AsyncExitStack) -> Listening:
        """Serve `host:port` until `stack` closes (it owns the listening resources); OSError if it cannot."""

    async def greet(self, peer: Any, on_control: OnControl, listener: str) -> ControlLink | None:
        """A peer that connected to `listener`, once it said hello; None (and the connection closed) if it did
        not."""

    async def dial(self, host: str, port: int, endpoint: str, on_control: OnControl) -> ControlLink:
        """A new connection to `endpoint`, as a link with its hello queued (OSError, ValueError or the
        transport's AqueductError when it cannot connect)."""

    def check_setup(self, link: ControlLink, msg: dict[str, Any]) -> None:
        """ValueError unless a "setup" message carries what this transport's sessions are made of."""

    def refuse_setup(self, msg: dict[str, Any]) -> None:
        """Release what a checked "setup" message carries: its session will not start."""

    async def aclose(self) -> None:
        """Release what the transport holds beyond its listeners and links (after they closed)."""

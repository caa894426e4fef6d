"""What the API's message path asks of the QUIC adapter, as a protocol: the API's modules that carry messages
(link.py, prefetch.py, drops.py, halves/, ...) know the adapter only through it.

The adapter (quic/protocol.py's AqueductProtocol) drives one engine per connection: it tells the link of the
engine's application events (`listener`), takes the engine's writes when the API asks (`flush` at once,
`flush_if_any` when a call usually writes nothing, `flush_soon` at the end of the loop turn), and says when a
send must wait for the peer (`send_blocked`, `new_stream_blocked`, `wait_while`, the datagram payload limit).
Only the modules that start an adapter (endpoints.py, connection.py, auth.py, reconnect.py) import
aqueduct.quic; an import-linter contract in pyproject.toml keeps the others off it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..core.app import AppEvent
from ..wire.channel_id import Side

if TYPE_CHECKING:
    from ..core.engine import Engine

Listener = Callable[[list[AppEvent]], None]
"""Told of every batch of the engine's application events."""


class Adapter(Protocol):
    """The QUIC adapter of one connection, as the message path sees it."""

    listener: Listener | None

    @property
    def engine(self) -> Engine | None:
        """The engine, once the connection has one (a server's: once the handshake made it)."""

    @property
    def side(self) -> Side:
        """Client or server."""

    @property
    def terminated(self) -> asyncio.Future[Any]:
        """Done once QUIC has ended the connection."""

    @property
    def datagram_payload_limit(self) -> int:
        """The largest unreliable message payload one datagram carries on this connection."""

    @property
    def send_blocked(self) -> Callable[[int | None], bool]:
        """Whether a send to a stream (None: a datagram) must wait for the peer."""

    @property
    def new_stream_blocked(self) -> Callable[[], bool]:
        """Whether a send that opens a stream must wait."""

    def flush(self) -> None:
        """Hand the engine's writes to QUIC now and transmit."""

    def flush_if_any(self) -> None:
        """As `flush`, only if the engine wrote something."""

    def flush_soon(self) -> None:
        """Transmit at the end of this loop turn."""

    async def wait_while(self, blocked: Callable[[], bool]) -> None:
        """Wait until `blocked()` is false; ConnectionLost if the connection ends first."""

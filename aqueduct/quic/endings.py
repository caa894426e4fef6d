"""How a connection ends: aioquic's termination, a failed handshake, a fault while handling its events, a vanished
server.

Theory of operation. `Endings` is mixed into AqueductProtocol (protocol.py), which owns the state it reads.

Termination: when aioquic reports ConnectionTerminated, `_on_terminated` cancels the connection's timers, fails
a pending handshake with a ConnectError that says why (for a client whose TLS stack refused the server's
certificate: what it was checked against), resolves `terminated`, and releases a client's own UDP socket.

A fault: an exception from the engine or from what hears its events (the API link, a schema check) while the
adapter handles one connection's events. The adapter's entry points (`_process_events`, `pump`, the engine timer)
catch it and call `_internal_error`: it is logged, the engine is closed with INTERNAL_ERROR (so the application
hears ConnectionClosed) and so is the QUIC connection. It never reaches the socket's callback, where it would
skip the other connections of a server's burst (burst.py).

A vanished server: a client's socket is connected to its server, so the kernel reports ICMP port unreachable
for its packets as ConnectionRefusedError in `error_received`. Before the handshake one ends the attempt
(nothing listens there). After it, UNREACHABLE_CONFIRMATIONS in a row with no packet from the server between
them end the connection: the first makes the client send a PING at once, whose own unreachable confirms (one
alone may be stale or forged; decision OPS-12); any packet from the server resets the count
(`datagram_received`). The engine hears ConnectionTerminated at once, so `recv()` raises ConnectionLost naming
the server within a round trip of the client's next packet instead of at the idle timeout.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from aioquic.quic.packet import QuicErrorCode

from ..core import transport as tp
from ..errors import ConnectError
from ..wire.channel_id import Side
from ..wire.errors import CloseCode

if TYPE_CHECKING:
    from ..core.engine import Engine
    from .aioquic_connection import PacedQuicConnection

log = logging.getLogger("aqueduct.quic")

UNREACHABLE_CONFIRMATIONS = 2
"""ICMP port unreachables in a row, with no packet from the server between them, that end an established client
connection."""


def _is_tls_alert(code: int) -> bool:
    """A QUIC CRYPTO_ERROR: a TLS alert (RFC 9001 section 4.8)."""
    return QuicErrorCode.CRYPTO_ERROR <= code < QuicErrorCode.CRYPTO_ERROR + 256


class Endings:
    """The fault and vanished-server endings of AqueductProtocol (whose attributes and methods these are)."""

    if TYPE_CHECKING:
        engine: Engine | None
        side: Side
        handshake: asyncio.Future[Any]
        terminated: asyncio.Future[tp.ConnectionTerminated]
        quic: PacedQuicConnection
        loop: asyncio.AbstractEventLoop
        _peer: str
        _trust: str
        _closing_locally: bool
        _unreachable: int
        _engine_timer: asyncio.TimerHandle | None
        _keepalive: asyncio.TimerHandle | None

        @property
        def transport(self) -> asyncio.DatagramTransport | None: ...
        @property
        def peer_address(self) -> tuple[str, int] | None: ...
        def _pump(self) -> None: ...
        def transmit_soon(self) -> None: ...
        def close_connection(self, error_code: int, reason: str) -> None: ...

    def _fail_handshake(self, why: str, code: int) -> None:
        if not self.handshake.done():
            self.handshake.set_exception(ConnectError(why, code))

    def _handshake_failure(self, event: tp.ConnectionTerminated) -> ConnectError:
        reason = event.reason or f"connection closed (code {event.error_code})"
        if self.side is Side.CLIENT and _is_tls_alert(event.error_code) and self.quic.closed_locally:
            # our TLS stack refused the server's certificate: say what it was checked against
            name = self.quic.configuration.server_name
            return ConnectError(f"TLS verification of {name} failed against {self._trust}: {reason}", event.error_code)
        return ConnectError(reason, event.error_code)

    def _on_terminated(self, event: tp.ConnectionTerminated) -> None:
        for timer in (self._engine_timer, self._keepalive):
            if timer is not None:
                timer.cancel()
        self._engine_timer = self._keepalive = None
        if not self.handshake.done():
            self.handshake.set_exception(self._handshake_failure(event))
        if not self.terminated.done():
            self.terminated.set_result(event)
        if self.side is Side.CLIENT and (transport := self.transport) is not None:
            # a client owns its UDP socket (open_client made it): release it, or each connection leaks one
            self.loop.call_soon(transport.close)

    def error_received(self, exc: Exception) -> None:
        """An ICMP error on a client's (connected) socket: port unreachable before the handshake ends the attempt;
        after it, UNREACHABLE_CONFIRMATIONS in a row end the connection (the first sends a PING to confirm)."""
        if self.side is not Side.CLIENT or not isinstance(exc, ConnectionRefusedError) or self._closing_locally:
            return
        if not self.handshake.done():
            self._fail_handshake(f"nothing is listening at {self._peer} (ICMP port unreachable)", 0)
            self.close_connection(0, "port unreachable")  # the socket closes once aioquic has ended it
            return
        self._unreachable += 1
        if self._unreachable < UNREACHABLE_CONFIRMATIONS:
            self.quic.send_ping(0)
            self.transmit_soon()
            return
        reason = f"the server at {self._peer} is gone (ICMP port unreachable)"
        engine = self.engine
        if engine is not None:  # the application hears it now, not after aioquic's closing period
            engine.handle_event(tp.ConnectionTerminated(0, reason, False), self.loop.time())
            self._pump()
        self.close_connection(0, reason)

    def _internal_error(self, exc: Exception) -> None:
        """Handling this connection's events raised: log it, end the connection with INTERNAL_ERROR (the
        application hears ConnectionClosed), and go on serving the others."""
        log.error("closing a connection (peer %s): %s handling its events", self._peer or self.peer_address,
                  type(exc).__name__, exc_info=exc)
        reason = f"internal error: {type(exc).__name__} while handling this connection's events"
        engine = self.engine
        if engine is not None and not engine.closed:
            try:
                engine.close(CloseCode.INTERNAL_ERROR, reason, now=self.loop.time())
                self._pump()
            except Exception:  # the fault is in what hears the close: the QUIC close below still ends it
                log.debug("telling the application of the close failed too", exc_info=True)
        self.close_connection(CloseCode.INTERNAL_ERROR, reason)

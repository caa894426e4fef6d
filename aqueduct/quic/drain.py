"""Read every datagram a UDP socket holds in one loop turn, not one per turn.

The stdlib event loop calls `datagram_received` once per readiness event and
reads one datagram each time, so a burst of N packets costs N loop turns,
N select() calls and, since a QUIC protocol transmits at the end of each turn,
N transmits (one ACK-only packet each). Draining the socket (up to a bound,
so one busy peer cannot starve the loop) hands aioquic the burst in one turn
and transmits once after it. uvloop already reads in batches: its transport
is left alone.
"""

from __future__ import annotations

import asyncio
import socket
from asyncio.selector_events import _SelectorDatagramTransport  # type: ignore[attr-defined]
from collections.abc import Callable
from typing import Any

MAX_BATCH = 64
"""Datagrams read per readiness event at most (the first one included)."""
MAX_DATAGRAM = 65536


def drainable_socket(transport: asyncio.BaseTransport | None) -> socket.socket | None:
    """The socket to drain behind a stdlib datagram transport, or None (another loop: leave it alone)."""
    if isinstance(transport, _SelectorDatagramTransport):
        sock = transport._sock
        return sock if isinstance(sock, socket.socket) else None
    return None


def drain(sock: socket.socket, handle: Callable[[bytes, Any], None], on_error: Callable[[Exception], None],
          limit: int = MAX_BATCH - 1) -> None:
    """Hand up to `limit` more waiting datagrams to `handle`; stop at an empty socket or an error."""
    for _ in range(limit):
        try:
            data, addr = sock.recvfrom(MAX_DATAGRAM)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            on_error(exc)
            return
        handle(data, addr)

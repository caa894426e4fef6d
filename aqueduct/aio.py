"""asyncio helpers that the QUIC adapter (quic/) and the API (api/) share.

The API's message path may not import the adapter (it knows it only as a protocol, api/adapter.py) and the
adapter may not import the API (the floors contract in pyproject.toml), so what both need of asyncio itself
lives here, one floor below the adapter; the sans-I/O engine and wire stay free of asyncio.
"""

from __future__ import annotations

import asyncio
from typing import Any


def mark_seen(fut: asyncio.Future[Any]) -> None:
    """A done-callback: mark the future's exception as retrieved, so asyncio does not log it as never retrieved.

    For a future whose failure is also reported another way (a refused connect raises where `connect` waits;
    a handshake failure closes the connection), and which may be left unawaited.
    """
    if not fut.cancelled():
        fut.exception()

"""bymux over one Marlin Stream stream (aeron_compat.marlin), as it runs over TCP.

Theory: a Stream stream is an ordered, reliable byte stream like a TCP
connection, so bymux's asyncio `Connection` runs on it unchanged: this glue
opens (or accepts) one Stream stream and hands its reader and writer to
`open_connection`. The Stream writer offers exactly what that connection uses
of an `asyncio.StreamWriter` (write, drain, close, wait_closed,
transport.get_write_buffer_size).
"""

from __future__ import annotations

import asyncio
from typing import cast

from aeron_compat.marlin.aio import StreamConnection

from .aio import Connection, open_connection


async def open_on_stream(conn: StreamConnection, **options: int) -> Connection:
    """bymux as initiator on a new stream of `conn`."""
    reader, writer = conn.open_stream()
    return await open_connection(reader, cast(asyncio.StreamWriter, writer), initiator=True, **options)


async def accept_on_stream(conn: StreamConnection, **options: int) -> Connection:
    """bymux as responder on the next stream the peer opens on `conn`."""
    reader, writer = await conn.accept_stream()
    return await open_connection(reader, cast(asyncio.StreamWriter, writer), initiator=False, **options)

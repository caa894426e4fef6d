"""The echo service (raw codec), used by `aqueduct serve --echo` and interop tests.

For each message arriving on a receiver it serves (starting with a
connection's entrypoint), it sends the payload back on every sender attached
to that message, in attachment order, with the reliability the message came
with (a stream message as reliable ordered, a datagram as unreliable), then
finishes that sender. Every receiver attached to a message is served by the
same rule, in its own task.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from ..core.app import Delivery
from ..errors import AqueductError, ChannelFinished
from .codec import RawMessage
from .connection import Connection
from .halves import Receiver, Sender

ECHO_MODE = {Delivery.ORDERED: Delivery.ORDERED, Delivery.UNORDERED: Delivery.ORDERED,
             Delivery.UNRELIABLE: Delivery.UNRELIABLE}


async def serve_receiver(rx: Receiver[Any], tasks: set[asyncio.Task[int]]) -> int:
    """Echo every message of `rx` until it ends; returns how many messages it saw."""
    seen = 0
    with contextlib.suppress(AqueductError):
        while True:
            try:
                msg = await rx.recv_message()
            except ChannelFinished:
                break
            seen += 1
            raw = msg.value
            assert isinstance(raw, RawMessage)
            for half in raw.attachments:
                if isinstance(half, Sender):
                    with contextlib.suppress(AqueductError):
                        await half.send(raw.data, mode=ECHO_MODE[msg.delivery])
                        await half.finish()
                else:
                    task = asyncio.ensure_future(serve_receiver(half, tasks))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
    return seen


async def echo_connection(conn: Connection[Any]) -> int:
    """Serve one connection's entrypoint by the echo rule until it ends; returns messages seen there."""
    tasks: set[asyncio.Task[int]] = set()
    try:
        return await serve_receiver(conn.entrypoint, tasks)
    finally:
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

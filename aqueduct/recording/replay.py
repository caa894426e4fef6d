"""Replaying one recorded channel: pick its messages, then send them again at the recorded pace or flat out.

`plan()` is pure data work: it selects the message rows of one channel
(`message_sent` for direction `out`, `message_received` for `in`) of one
connection, by default the channel with the most messages, and turns them
into (offset from the first message, delivery mode, payload). A recording
made without payloads (the default), or with payloads over its cap, is
refused unless zero-filled payloads of the recorded lengths are asked for.
Received reliable messages (`reliable`: the receiving side cannot tell
ordered from unordered) are replayed ordered, in the order they were taken.
`replay()` connects with the raw codec, so the recorded bytes are exactly
what travels, sends on the entrypoint, finishes it and waits until the
peer has everything.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pyarrow.compute as pc

from ..core.app import Delivery
from .reader import RecordingError, read_recording
from .schema import RELIABLE, Kind

DIRECTION_KIND = {"out": Kind.MESSAGE_SENT.value, "in": Kind.MESSAGE_RECEIVED.value}


@dataclass(frozen=True, slots=True)
class ReplayMessage:
    """One message to send again."""

    offset_s: float
    """Seconds after the channel's first recorded message."""
    delivery: Delivery
    payload: bytes
    recorded_payload: bool
    """False when the recording had no payload bytes (zero-filled to the recorded length)."""


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    """What will be replayed."""

    connection: str
    channel: int
    messages: list[ReplayMessage]


def plan(
    directory: str | os.PathLike[str],
    connection: str | None = None,
    channel: int | None = None,
    direction: str = "out",
    zero_fill: bool = False,
) -> ReplayPlan:
    """The messages of one recorded channel, in recorded order (RecordingError if there are none, or if some have
    no recorded payload and `zero_fill` is off; with it they become zero bytes of the recorded length)."""
    table = read_recording(directory, ["time_ns", "kind", "connection", "channel", "delivery", "length", "payload"])
    table = table.filter(pc.equal(table["kind"], DIRECTION_KIND[direction]))
    if connection is not None:
        table = table.filter(pc.equal(table["connection"], connection))
    if channel is not None:
        table = table.filter(pc.equal(table["channel"], channel))
    if table.num_rows == 0:
        raise RecordingError(f"no {DIRECTION_KIND[direction]} rows for connection={connection} channel={channel}")
    counts = Counter(zip(table["connection"].to_pylist(), table["channel"].to_pylist(), strict=True))
    (conn, chan), _ = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    table = table.filter(pc.and_(pc.equal(table["connection"], conn), pc.equal(table["channel"], chan)))
    table = table.take(pc.sort_indices(table, [("time_ns", "ascending")]))
    rows: list[dict[str, Any]] = table.to_pylist()
    missing = sum(1 for r in rows if r["payload"] is None)
    if missing and not zero_fill:
        raise RecordingError(
            f"no payloads recorded for {missing} of {len(rows)} messages of channel {chan} of connection {conn} "
            "(record with --record-payloads / Recorder(payloads=True), within its --payload-limit; "
            "or replay zero bytes of the recorded lengths with --zero-fill)"
        )
    t0 = rows[0]["time_ns"]
    messages = [
        ReplayMessage(
            (r["time_ns"] - t0) / 1e9,
            Delivery.ORDERED if r["delivery"] == RELIABLE else Delivery(r["delivery"]),
            r["payload"] if r["payload"] is not None else bytes(r["length"]),
            r["payload"] is not None,
        )
        for r in rows
    ]
    return ReplayPlan(conn, chan, messages)


async def replay(
    replay_plan: ReplayPlan,
    url: str,
    *,
    paced: bool = True,
    speed: float = 1.0,
    timeout: float = 30.0,
    **connect_kwargs: Any,
) -> int:
    """Send the plan's messages on a new connection's entrypoint; returns how many were sent."""
    from ..api.codec import RawCodec
    from ..api.endpoints import connect

    async with connect(url, codec=RawCodec(), **connect_kwargs) as conn:
        loop = asyncio.get_running_loop()
        start = loop.time()
        sender = conn.entrypoint
        for msg in replay_plan.messages:
            if paced:
                delay = start + msg.offset_s / speed - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            await sender.send(msg.payload, mode=msg.delivery)
        await sender.finish()
        await asyncio.wait_for(sender.ended(), timeout)
    return len(replay_plan.messages)

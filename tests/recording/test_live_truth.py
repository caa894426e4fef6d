"""What a live recording says about delivery modes and channel ends matches what the application did.

Issue 19 items 1 and 2: the receiving side cannot see ordered vs unordered on the wire (it used to record every
stream message as `ordered`), and a sender finished and then dropped ended without any end row.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from pathlib import Path
from typing import Any

import aqueduct
from aqueduct import Delivery
from aqueduct.quic.certs import DevCerts
from aqueduct.recording import read_events

GUARD = 20.0
CHANNELS = 5


async def _run(certs: DevCerts, tmp_path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    drained = 0
    all_drained = asyncio.Event()

    async def handle(conn: aqueduct.Connection) -> None:
        nonlocal drained
        with contextlib.suppress(aqueduct.ConnectionLost):
            async for req in conn.entrypoint:
                async for _ in req["data"]:
                    pass
                drained += 1
                if drained == CHANNELS:
                    all_drained.set()

    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, record=tmp_path / "server") as server:
        tasks: set[asyncio.Future[None]] = set()

        async def accept() -> None:
            async for c in server:
                tasks.add(asyncio.ensure_future(handle(c)))

        acceptor = asyncio.ensure_future(accept())
        host, port = server.address
        async with aqueduct.connect(f"aqueduct://{host}:{port}", ca=certs.ca, record=tmp_path / "client") as conn:
            for k in range(CHANNELS):
                tx, rx = aqueduct.channel()
                await conn.entrypoint.send({"data": rx})
                for _ in range(3):
                    await tx.send(b"x" * k, mode=Delivery.UNORDERED)
                await tx.finish()
                del tx  # finished, then dropped
                gc.collect()
            await asyncio.wait_for(all_drained.wait(), GUARD)
        acceptor.cancel()
    return read_events(tmp_path / "client"), read_events(tmp_path / "server")


async def test_unordered_is_not_recorded_as_ordered_on_the_receiving_side(certs: DevCerts, tmp_path: Path) -> None:
    client, server = await _run(certs, tmp_path)
    data_channels = {e["channel"] for e in client if e["kind"] == "channel_created"}
    assert len(data_channels) == CHANNELS
    received = [e for e in server if e["kind"] == "message_received" and e["channel"] in data_channels]
    assert len(received) == 3 * CHANNELS
    # the wire does not say ordered or unordered: the receiving side records what it knows, `reliable`
    assert {e["delivery"] for e in received} == {"reliable"}
    sent = [e for e in client if e["kind"] == "message_sent" and e["channel"] in data_channels]
    assert {e["delivery"] for e in sent} == {"unordered"}


async def test_a_finished_then_dropped_sender_records_its_end(certs: DevCerts, tmp_path: Path) -> None:
    client, server = await _run(certs, tmp_path)
    data_channels = {e["channel"] for e in client if e["kind"] == "channel_created"}
    # every finished-then-dropped sender has its end row, on the sending side
    ends = {e["channel"]: e["kind"] for e in client if e["kind"].startswith(("channel_", "receiver_"))
            and e["kind"] != "channel_created" and e["direction"] == "out"}  # fmt: skip
    assert {ch: ends.get(ch) for ch in data_channels} == {ch: "channel_finished" for ch in data_channels}
    # and every receiver the server dropped after the end has exactly one end row too
    rx_ends = [e for e in server if e["kind"] == "channel_finished" and e["channel"] in data_channels]
    assert sorted(e["channel"] for e in rx_ends) == sorted(data_channels)


async def test_both_sides_record_the_link_they_share(certs: DevCerts, tmp_path: Path) -> None:
    client, server = await _run(certs, tmp_path)
    (c_open,) = [e for e in client if e["kind"] == "connection_opened"]
    (s_open,) = [e for e in server if e["kind"] == "connection_opened"]
    assert c_open["connection"] != s_open["connection"]
    assert c_open["link"] and c_open["link"] == s_open["link"]
    assert c_open["host"] and c_open["host"] == s_open["host"]

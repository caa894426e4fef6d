"""Per-message outcomes: `send(..., confirm=True)` and `try_send(..., confirm=True)` learn each message's fate
from the engine's acks and nacks (or, locally, from the receiver taking it), in all three delivery modes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import aqueduct
from aqueduct import Outcome
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running


async def test_local_outcomes() -> None:
    tx, rx = aqueduct.channel()
    fut = tx.try_send("a", confirm=True)
    assert not fut.done()
    assert await rx.recv() == "a"
    assert await guard(fut) is Outcome.ACKED and fut.result().delivered
    queued = tx.try_send("b", confirm=True)
    rx.close()
    assert await guard(queued) is Outcome.RECEIVER_DROPPED and not queued.result().delivered
    tx2, rx2 = aqueduct.channel()
    pending = tx2.try_send("c", confirm=True)
    tx2.cancel()
    assert await guard(pending) is Outcome.CANCELLED
    del rx2


async def _take_all(conn: aqueduct.Connection[Any]) -> None:
    async for msg in conn.entrypoint:
        if isinstance(msg, dict) and "lane" in msg:
            async for _ in msg["lane"]:
                pass


@pytest.mark.parametrize("mode", ["ordered", "unordered", "unreliable"])
async def test_acked_over_a_connection(certs: DevCerts, mode: str) -> None:
    async with running(certs, _take_all) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        lane_tx, lane_rx = aqueduct.channel()
        await conn.entrypoint.send({"lane": lane_rx})
        outcomes = [await guard(lane_tx.send(i, mode=mode, confirm=True)) for i in range(5)]
        assert outcomes == [Outcome.ACKED] * 5
        fut = lane_tx.try_send(5, mode=mode, confirm=True)
        assert await guard(fut) is Outcome.ACKED


async def test_a_local_confirmed_message_queued_before_its_channel_moved(certs: DevCerts) -> None:
    async with running(certs, _take_all) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        lane_tx, lane_rx = aqueduct.channel()
        early = lane_tx.try_send("queued locally", confirm=True)
        await conn.entrypoint.send({"lane": lane_rx})  # the receiver moves; the queued message follows it
        assert await guard(early) is Outcome.ACKED


async def test_lost_outcomes_say_why(certs: DevCerts) -> None:
    hold: asyncio.Queue[Any] = asyncio.Queue()

    async def holder(conn: aqueduct.Connection[Any]) -> None:
        async for msg in conn.entrypoint:
            hold.put_nowait(msg["lane"])  # keeps the receiver, never reads it

    async with running(certs, holder) as (url, _):
        async with aqueduct.connect(url, ca=certs.ca) as conn:
            lane_tx, lane_rx = aqueduct.channel()
            await conn.entrypoint.send({"lane": lane_rx})
            held = await guard(hold.get())
            unread = lane_tx.try_send("never read", confirm=True)
            held.close()  # the receiving application drops it unread
            assert await guard(unread) is Outcome.NACKED
            assert await guard(lane_tx.ended()) is aqueduct.EndReason.RECEIVER_DROPPED

            lane_tx, lane_rx = aqueduct.channel()
            await conn.entrypoint.send({"lane": lane_rx})
            held = await guard(hold.get())
            cancelled = lane_tx.try_send("cancelled", confirm=True)
            lane_tx.cancel()
            assert await guard(cancelled) is Outcome.CANCELLED

            lane_tx, lane_rx = aqueduct.channel()
            await conn.entrypoint.send({"lane": lane_rx})
            held = await guard(hold.get())
            stranded = lane_tx.try_send("stranded", confirm=True)
            await conn.close(code=1, reason="bye")
            assert await guard(stranded) is Outcome.CONNECTION_LOST

"""In-process channels: the API works without any network."""

from __future__ import annotations

import gc

import pytest

from aqueduct import ChannelCancelled, ChannelClosed, ChannelFinished, ReceiverDropped, WouldBlock, channel
from aqueduct.core.app import Delivery


async def test_send_recv_finish_and_iterate() -> None:
    tx, rx = channel()
    async with tx:
        for i in range(3):
            await tx.send({"i": i})
    assert [m async for m in rx] == [{"i": 0}, {"i": 1}, {"i": 2}]
    with pytest.raises(ChannelFinished):
        await rx.recv()
    with pytest.raises(ChannelClosed):
        await tx.send(1)


async def test_modes_are_reported() -> None:
    tx, rx = channel()
    await tx.send("a", mode="unreliable")
    await tx.send("b", mode=Delivery.UNORDERED)
    assert (await rx.recv_message()).delivery is Delivery.UNRELIABLE
    assert (await rx.recv_message()).delivery is Delivery.UNORDERED


async def test_cancel_is_seen_after_queued_messages_are_dropped() -> None:
    tx, rx = channel()
    await tx.send("never taken")
    tx.cancel()
    with pytest.raises(ChannelCancelled):
        await rx.recv()


async def test_close_receiver_is_seen_by_sender() -> None:
    tx, rx = channel()
    rx.close()
    with pytest.raises(ReceiverDropped):
        await tx.send(1)


async def test_try_send_would_block_and_send_waits_for_room() -> None:
    import asyncio

    tx, rx = channel(capacity=2)
    tx.try_send(1)
    tx.try_send(2)
    with pytest.raises(WouldBlock):
        tx.try_send(3)
    blocked = asyncio.ensure_future(tx.send(3))
    await asyncio.sleep(0)
    assert not blocked.done()
    assert await rx.recv() == 1
    await asyncio.wait_for(blocked, 5)
    assert [await rx.recv(), await rx.recv()] == [2, 3]


async def test_dropping_halves_ends_the_channel() -> None:
    tx, rx = channel()
    del tx
    gc.collect()
    with pytest.raises(ChannelCancelled):
        await rx.recv()
    tx2, rx2 = channel()
    del rx2
    gc.collect()
    with pytest.raises(ReceiverDropped):
        await tx2.send(1)


async def test_halves_travel_inside_local_messages() -> None:
    tx, rx = channel()
    reply_tx, reply_rx = channel()
    await tx.send({"ask": "time", "reply": reply_tx})
    req = await rx.recv()
    await req["reply"].send("noon")
    assert await reply_rx.recv() == "noon"

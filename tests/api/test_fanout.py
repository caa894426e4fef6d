"""Fan-in and fan-out: Sender.clone, broadcast (Lagged or block), watch (latest value), locally and across a
connection (a subscriber's Receiver travels in a message like any other)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

import aqueduct
from aqueduct import Receiver
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running


async def test_clones_share_a_channel_that_finishes_with_the_last() -> None:
    tx, rx = aqueduct.channel(int)
    a, b = tx.clone(), tx.clone()
    await tx.send(1)
    await a.send(2)
    await tx.finish()
    await a.finish()
    await b.send(3)  # one clone still open: the channel goes on
    del b
    gc.collect()  # the last clone dropped: the channel finishes (not cancels)
    assert [v async for v in rx] == [1, 2, 3]


async def test_a_cancel_by_any_clone_ends_the_channel_for_all() -> None:
    tx, rx = aqueduct.channel()
    twin = tx.clone()
    twin.cancel()
    with pytest.raises(aqueduct.ChannelClosed):
        await tx.send("late")
    with pytest.raises(aqueduct.ChannelCancelled):
        await rx.recv()


async def test_cloned_senders_follow_their_receiver_onto_a_connection(certs: DevCerts) -> None:
    got: asyncio.Queue[Any] = asyncio.Queue()

    async def server(conn: aqueduct.Connection[Any]) -> None:
        async for msg in conn.entrypoint:
            got.put_nowait(sorted([v async for v in msg["rx"]]))

    async with running(certs, server) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = aqueduct.channel()
        clones = [tx.clone() for _ in range(3)]
        with pytest.raises(aqueduct.ChannelClosed, match="cloned sender"):
            await conn.entrypoint.send({"tx": tx})  # a cloned sender cannot travel while its clones are open
        await conn.entrypoint.send({"rx": rx})  # the receiver moves: every clone now sends on the connection
        await asyncio.gather(*(c.send(i) for i, c in enumerate(clones)), tx.send(9))
        for sender in (*clones, tx):
            await sender.finish()
        assert await guard(got.get()) == [0, 1, 2, 9]


async def test_broadcast_lagged_subscriber_is_told_and_goes_on() -> None:
    bc = aqueduct.Broadcast(int, capacity=2)
    fast, slow = bc.subscribe(), bc.subscribe()
    for i in range(6):
        await bc.send(i)
        if i < 5:
            assert await guard(fast.recv()) == i
    # the slow subscriber's pump sent what its channel took; its queue of 2 dropped the rest
    seen: list[Any] = []
    await bc.close()
    while True:
        try:
            seen.append(await guard(slow.recv()))
        except aqueduct.Lagged as lag:
            seen.append(f"lagged {lag.n}")
        except aqueduct.ChannelFinished:
            break
    values = [v for v in seen if isinstance(v, int)]
    assert values[-2:] == [4, 5] and values == sorted(values)  # order kept, the newest always delivered
    skipped = sum(int(v.split()[1]) for v in seen if isinstance(v, str))
    assert skipped == 6 - len(values) and skipped > 0


async def test_broadcast_block_paces_the_producer_by_the_slowest() -> None:
    bc = aqueduct.Broadcast(int, capacity=1, on_lag="block")
    rx = bc.subscribe()
    sent = 0

    async def produce() -> None:
        nonlocal sent
        for i in range(2000):
            await bc.send(i)
            sent += 1
        await bc.close()

    task = asyncio.ensure_future(produce())
    got = [await guard(rx.recv()) for _ in range(10)]
    assert got == list(range(10)) and not task.done()  # it waits for us: nothing skipped
    got += [v async for v in rx]
    await guard(task)
    assert got == list(range(2000))


async def test_watch_gives_the_latest_value() -> None:
    w = aqueduct.Watch(str, "initial")
    rx = w.subscribe()
    assert await guard(rx.recv()) == "initial"
    for v in ("a", "b", "c"):
        await w.send(v)
    latest = await guard(rx.recv())
    assert latest in ("a", "c")  # intermediate values may be skipped; the latest never is
    if latest != "c":
        assert await guard(rx.recv()) == "c"
    late = w.subscribe()
    assert await guard(late.recv()) == "c"
    await w.close()
    assert [v async for v in rx] == []


async def test_broadcast_subscribers_across_a_connection(certs: DevCerts) -> None:
    got: asyncio.Queue[Any] = asyncio.Queue()

    async def listener(conn: aqueduct.Connection[Any]) -> None:
        async for msg in conn.entrypoint:
            feed: Receiver[Any] = msg["feed"]
            while True:
                try:
                    got.put_nowait(await feed.recv())
                except aqueduct.Lagged as lag:
                    got.put_nowait(("lagged", lag.n))
                except aqueduct.ChannelFinished:
                    got.put_nowait("end")
                    return

    async with running(certs, listener) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        bc = aqueduct.Broadcast(int, capacity=1)
        await conn.entrypoint.send({"feed": bc.subscribe()})  # the subscriber's Receiver travels
        local = bc.subscribe()
        await bc.send(1)
        assert await guard(got.get()) == 1 and await guard(local.recv()) == 1
        bc._subs[0].lagged = 3  # (as if 3 values had been dropped for the remote subscriber)
        await bc.send(2)
        assert await guard(got.get()) == ("lagged", 3)  # Lagged crosses the connection in band
        assert await guard(got.get()) == 2
        await bc.close()
        assert await guard(got.get()) == "end"


@pytest.mark.parametrize("kind", ["timeout=", "asyncio.timeout"])
async def test_a_blocking_broadcast_send_times_out_having_offered_nothing(kind: str) -> None:
    bc = aqueduct.Broadcast(int, capacity=1, on_lag="block")
    rx = bc.subscribe()  # never read until the producer blocked
    sent: list[int] = []
    for i in range(100):  # bounded: a handful fill the subscriber's queue and channel
        try:
            if kind == "timeout=":
                await bc.send(i, timeout=0.05)
            else:
                async with asyncio.timeout(0.05):
                    await bc.send(i)
        except TimeoutError as exc:
            assert isinstance(exc, aqueduct.Timeout if kind == "timeout=" else TimeoutError)
            break
        sent.append(i)
    else:
        pytest.fail("a blocking broadcast never blocked")
    reader = asyncio.ensure_future(_all(rx))
    await guard(bc.send(1000))  # the broadcast goes on
    await bc.close()
    assert await guard(reader) == [*sent, 1000]  # the timed-out value reached nobody


async def _all(rx: Receiver[int]) -> list[int]:
    return [v async for v in rx]


async def test_a_typed_broadcast_or_watch_refuses_a_wrong_value_in_send() -> None:
    bc = aqueduct.Broadcast(int)
    rx = bc.subscribe()
    with pytest.raises(aqueduct.ValidationError, match="broadcast"):
        await bc.send("one")  # type: ignore[arg-type]
    await bc.send(1)
    await bc.close()
    assert await guard(_all(rx)) == [1]  # (the pump would have died on "one": the channel never finished)
    w = aqueduct.Watch(int, 0)
    with pytest.raises(aqueduct.ValidationError, match="watch"):
        await w.send("one")  # type: ignore[arg-type]
    assert w.value == 0

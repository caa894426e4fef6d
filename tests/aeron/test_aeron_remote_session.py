"""The receiving side of a network session, driven through local channel pairs (no network)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from aeron_compat import Aeron, Context
from aeron_compat.client.logbuffer import TermAppender
from aeron_compat.media.aqueduct_session import AqueductSession
from aeron_compat.media.batch import encode_batch
from aqueduct.api import channel

TERM = 65536


class FakeNet:
    """What AqueductSession needs from DriverNetwork: counters, ids, and 'run on the loop'."""

    def __init__(self, aeron: Aeron) -> None:
        self.aeron = aeron
        self.sessions: set[AqueductSession] = set()
        self.loop = asyncio.get_running_loop()

    def call(self, fn: Callable[[], object]) -> None:
        fn()

    def count(self, name: str, n: int = 1) -> None:
        self.aeron.driver.counters.add(name, n)

    @staticmethod
    def next_id() -> int:
        return 1

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.loop.create_task(coro)


class FakeLink:
    peer = "192.0.2.7:4242"


async def start_session(aeron: Aeron) -> tuple[AqueductSession, Any, Any, asyncio.Task[None]]:
    sub = aeron.add_subscription("aeron:ipc", 5)
    data_tx, data_rx = channel()
    status_tx, status_rx = channel()
    msg = {"session": 9, "stream": 5, "itid": 0, "tl": TERM, "win": 128, "rel": False, "join": 0,
           "data": data_rx, "status": status_tx}
    session = AqueductSession(FakeNet(aeron), FakeLink(), sub, msg)  # type: ignore[arg-type]
    sub._add_image(session.image)
    return session, data_tx, status_rx, asyncio.create_task(session.run())


def polled(session: AqueductSession) -> list[bytes]:
    got: list[bytes] = []
    session.sub.poll(lambda buf, hdr: got.append(bytes(buf)), 100)
    return got


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_gaps_are_counted_duplicates_dropped_and_finish_is_end_of_stream() -> None:
    async with Aeron.connect(Context(counters_interval=0)) as aeron:
        session, data_tx, status_rx, task = await start_session(aeron)
        appender = TermAppender(TERM, 0, 1408)
        frames = [appender.append(bytes([i]) * 10)[0] for i in range(4)]
        await data_tx.send(encode_batch(frames[:1]))
        await data_tx.send(encode_batch(frames[2:3]))   # frame 1 lost on the unreliable lane
        await data_tx.send(encode_batch(frames[:1]))    # a late duplicate
        await data_tx.send(encode_batch(frames[3:]))
        await settle()
        assert polled(session) == [bytes([0]) * 10, bytes([2]) * 10, bytes([3]) * 10]
        assert aeron.counters["nacks"] == 1
        assert session.image.source_identity == "192.0.2.7:4242"
        assert await asyncio.wait_for(status_rx.recv(), 5) == session.image.position
        await data_tx.finish()
        await asyncio.wait_for(task, 5)
        assert session.image.is_end_of_stream and session.image.is_closed


async def test_a_malformed_batch_loses_the_image_and_counts_an_error() -> None:
    async with Aeron.connect(Context(counters_interval=0)) as aeron:
        session, data_tx, _, task = await start_session(aeron)
        await data_tx.send(b"\x01\x02")
        await asyncio.wait_for(task, 5)
        assert session.image.is_closed and not session.image.is_end_of_stream
        assert aeron.counters["errors"] == 1 and session.closed

"""Dropped halves: no finalizer object per half, drops batched per loop turn, the self-pipe only off the loop
thread; a moved half drops nothing; a send carrying a half binds it before returning; a channel's last
message and its FIN are one aioquic write."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import pytest

import aqueduct
from aqueduct import ChannelCancelled
from aqueduct.api.connection import link_of
from aqueduct.api.halves.wiring import ended_here, open_handle
from aqueduct.core.app import Delivery
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running


def _next_turn() -> asyncio.Future[None]:
    """A future done once every callback scheduled before it has run (the loop runs them in order)."""
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    loop.call_soon(fut.set_result, None)
    return fut


async def _holding_server(certs: DevCerts, held: list[Any], cancelled: asyncio.Queue[int]) -> Any:
    async def handler(conn: aqueduct.Connection) -> None:
        async for req in conn.entrypoint:
            held.append(req["rx"])
            held.append(asyncio.ensure_future(_await_cancel(req["rx"], req["n"], cancelled)))

    return running(certs, handler)


async def _await_cancel(rx: aqueduct.Receiver, n: int, cancelled: asyncio.Queue[int]) -> None:
    with pytest.raises(ChannelCancelled):
        await rx.recv()
    cancelled.put_nowait(n)


async def test_channels_and_networked_halves_register_no_finalizers(certs: DevCerts) -> None:
    held: list[Any] = []
    cancelled: asyncio.Queue[int] = asyncio.Queue()
    async with await _holding_server(certs, held, cancelled) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        before = len(weakref.finalize._registry)  # type: ignore[attr-defined]
        pairs = [aqueduct.channel() for _ in range(10)]
        for n, (_tx, rx) in enumerate(pairs):
            await conn.entrypoint.send({"rx": rx, "n": n})
        assert all(tx.networked for tx, _ in pairs)
        assert len(weakref.finalize._registry) == before  # type: ignore[attr-defined]
        del pairs, _tx, rx
        gc.collect()
        assert sorted([await guard(cancelled.get()) for _ in range(10)]) == list(range(10))


@pytest.mark.pure_python  # wraps drop_sender on the engine instance
async def test_drops_of_one_turn_reach_the_engine_in_one_batch_without_the_self_pipe(
    certs: DevCerts, monkeypatch: pytest.MonkeyPatch
) -> None:
    held: list[Any] = []
    cancelled: asyncio.Queue[int] = asyncio.Queue()
    async with await _holding_server(certs, held, cancelled) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        senders = []
        for n in range(3):
            tx, rx = aqueduct.channel()
            await conn.entrypoint.send({"rx": rx, "n": n})
            senders.append(tx)
        handles = [open_handle(tx) for tx in senders]
        told: list[int | None] = []
        batches = 0
        engine_drop, run_drops = link_of(conn).engine.drop_sender, link_of(conn).drops.run

        def drop_sender(handle: int, now: float | None = None) -> None:
            told.append(handle)
            engine_drop(handle, now=now)

        def counted() -> None:
            nonlocal batches
            batches += 1
            run_drops()

        loop = asyncio.get_running_loop()
        threadsafe: list[Any] = []
        monkeypatch.setattr(link_of(conn).engine, "drop_sender", drop_sender)
        monkeypatch.setattr(link_of(conn).drops, "run", counted)
        original = loop.call_soon_threadsafe
        def recording(*args: Any) -> Any:
            threadsafe.append(args)
            return original(*args)

        monkeypatch.setattr(loop, "call_soon_threadsafe", recording)
        try:
            del senders, tx
            gc.collect()
            assert told == []  # deferred: a collection may run inside the engine
            await _next_turn()
            assert set(told) == set(handles) and len(told) == 3 and batches == 1
            assert threadsafe == []  # on the loop thread: no self-pipe write
        finally:
            monkeypatch.undo()
        assert sorted([await guard(cancelled.get()) for _ in range(3)]) == [0, 1, 2]


async def test_a_drop_on_another_thread_wakes_the_loop(certs: DevCerts, monkeypatch: pytest.MonkeyPatch) -> None:
    held: list[Any] = []
    cancelled: asyncio.Queue[int] = asyncio.Queue()
    async with await _holding_server(certs, held, cancelled) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send({"rx": rx, "n": 7})
        box = [tx]
        del tx
        loop = asyncio.get_running_loop()
        threadsafe = 0
        original = loop.call_soon_threadsafe

        def counting(*args: Any) -> Any:
            nonlocal threadsafe
            threadsafe += 1
            return original(*args)

        monkeypatch.setattr(loop, "call_soon_threadsafe", counting)
        try:
            await asyncio.to_thread(box.clear)  # the last reference goes on a worker thread
            assert await guard(cancelled.get()) == 7
        finally:
            monkeypatch.undo()
        assert threadsafe >= 1


async def test_a_half_moved_into_a_message_drops_nothing(certs: DevCerts) -> None:
    got: asyncio.Queue[Any] = asyncio.Queue()

    async def handler(conn: aqueduct.Connection) -> None:
        async for req in conn.entrypoint:
            got.put_nowait(await req["rx"].recv())

    async with running(certs, handler) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send({"rx": rx})
        with pytest.raises(aqueduct.ChannelClosed):
            await rx.recv()
        del rx
        gc.collect()
        assert not link_of(conn).drops.queue and not link_of(conn).drops.scheduled
        await tx.send("still open")
        assert await guard(got.get()) == "still open"


async def test_a_send_carrying_a_half_binds_it_without_a_coroutine(certs: DevCerts) -> None:
    async def handler(conn: aqueduct.Connection) -> None:
        async for _ in conn.entrypoint:
            pass

    async with running(certs, handler) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = aqueduct.channel()
        ep = conn.entrypoint
        assert link_of(conn).send(open_handle(ep), {"rx": rx}, Delivery.ORDERED) is None
        assert tx.networked and ended_here(rx) is not None


@pytest.mark.parametrize("mode", ["ordered", "unordered"])
async def test_a_last_message_and_its_fin_are_one_write(certs: DevCerts, mode: str) -> None:
    got: asyncio.Queue[Any] = asyncio.Queue()

    async def handler(conn: aqueduct.Connection) -> None:
        async for req in conn.entrypoint:
            got.put_nowait([m async for m in req["rx"]])

    async with running(certs, handler) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = aqueduct.channel(mode)
        await conn.entrypoint.send({"rx": rx})
        await _next_turn()
        quic: Any = link_of(conn).protocol.quic
        writes: list[tuple[int, int, bool]] = []
        original = quic.send_stream_data

        def recording(sid: int, data: bytes, end_stream: bool = False) -> None:
            writes.append((sid, len(data), end_stream))
            original(sid, data, end_stream)

        quic.send_stream_data = recording
        handle = open_handle(tx)
        await tx.send(b"last")
        await tx.finish()
        await _next_turn()
        del quic.send_stream_data
        stream = link_of(conn)._last_stream[handle]
        assert stream is not None
        channel_writes = [w for w in writes if w[0] == stream]
        assert len(channel_writes) == 1 and channel_writes[0][1] > 0 and channel_writes[0][2]
        assert await guard(got.get()) == [b"last"]

"""A networked receiver takes queued messages in batches (prefetch): every receive-side rule still holds.

Each test makes the receiver hold messages it took ahead of the application, then checks one rule: a
close discards them, a cancel discards them, a finish ends only after them, a message the codec refuses
raises in its own turn, and a receiver moved on to the peer forwards them first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

import aqueduct
from aqueduct import ChannelCancelled, ChannelClosed, CodecError, ReceiverDropped
from aqueduct.api import CborCodec
from aqueduct.api.connection import link_of
from aqueduct.api.halves.wiring import open_handle
from aqueduct.core.app import AppEvent, ReceiverEnded
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running

N = 10


def _prefetched(rx: aqueduct.Receiver) -> int:
    """Messages `rx` took from its engine and the application has not read yet."""
    buf = getattr(rx._binding, "buf", ())  # (a networked receiver's prefetch buffer: halves/bindings.py)
    return len(buf)


async def _first_with_rest_prefetched(rx: aqueduct.Receiver) -> Any:
    first = await guard(rx.recv())
    assert _prefetched(rx) == N - 1, "the sender wrote all in one turn: one take holds the rest"
    return first


def _sends_in_one_turn(tx: aqueduct.Sender, values: Sequence[Any]) -> None:
    for v in values:
        tx.try_send(v)


async def test_close_discards_what_was_prefetched(certs: DevCerts) -> None:
    outcome: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    async def handler(conn: aqueduct.Connection) -> None:
        rx: aqueduct.Receiver = await conn.entrypoint.recv()
        first = await _first_with_rest_prefetched(rx)
        rx.close()
        with pytest.raises(ChannelClosed):
            await rx.recv()
        with pytest.raises(ChannelClosed):
            async for _ in rx:
                pass
        outcome.set_result(first)

    async with running(certs, handler) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send(rx)
        _sends_in_one_turn(tx, range(N))
        assert await guard(outcome) == 0
        with pytest.raises(ReceiverDropped):
            while True:
                await guard(tx.send("more"))


async def test_a_cancel_discards_what_was_prefetched(certs: DevCerts) -> None:
    outcome: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()

    async def handler(conn: aqueduct.Connection) -> None:
        first = await conn.entrypoint.recv()
        rx: aqueduct.Receiver = first["data"]
        await _first_with_rest_prefetched(rx)
        ended = asyncio.Event()
        listener = link_of(conn).protocol.listener
        assert listener is not None

        def spy(events: list[AppEvent]) -> None:
            listener(events)
            if any(isinstance(e, ReceiverEnded) and e.receiver == open_handle(rx) for e in events):
                ended.set()

        link_of(conn).protocol.listener = spy
        await first["go"].send("cancel now")
        await guard(ended.wait())
        try:
            await rx.recv()
        except BaseException as exc:  # (the outcome is what the test checks)
            outcome.set_result(exc)

    async with running(certs, handler) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = aqueduct.channel()
        go_tx, go_rx = aqueduct.channel()
        await conn.entrypoint.send({"data": rx, "go": go_tx})
        _sends_in_one_turn(tx, range(N))
        assert await guard(go_rx.recv()) == "cancel now"
        tx.cancel()
        assert isinstance(await guard(outcome), ChannelCancelled)


async def test_a_finish_ends_the_iteration_only_after_every_prefetched_message(certs: DevCerts) -> None:
    got: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()

    async def handler(conn: aqueduct.Connection) -> None:
        rx: aqueduct.Receiver = await conn.entrypoint.recv()
        values = [await _first_with_rest_prefetched(rx)]
        values += [v async for v in rx]
        with pytest.raises(aqueduct.ChannelFinished):
            await rx.recv()
        got.set_result(values)

    async with running(certs, handler) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send(rx)
        _sends_in_one_turn(tx, range(N))
        await tx.finish()
        assert await guard(got) == list(range(N))


class PickyCodec(CborCodec):
    """CBOR that refuses to decode the string 'bad' (both ends use it: the name must match)."""

    name = "cbor-picky"

    def decode(self, payload: bytes, halves: Sequence[Any]) -> Any:
        value = super().decode(payload, halves)
        if value == "bad":
            raise CodecError("picky: refuses 'bad'")
        return value


async def test_a_message_that_does_not_decode_raises_in_its_own_turn(certs: DevCerts) -> None:
    got: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()

    async def handler(conn: aqueduct.Connection) -> None:
        rx: aqueduct.Receiver = await conn.entrypoint.recv()
        seen: list[Any] = []
        while True:
            try:
                seen.append(await rx.recv())
            except CodecError:
                seen.append("error")
            except aqueduct.ChannelFinished:
                break
        got.set_result(seen)

    async with (
        running(certs, handler, codec=PickyCodec()) as (url, _),
        aqueduct.connect(url, ca=certs.ca, codec=PickyCodec()) as conn,
    ):
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send(rx)
        _sends_in_one_turn(tx, ["bad", "a", "bad", "bad", "b", "bad"])
        await tx.finish()
        assert await guard(got) == ["error", "a", "error", "error", "b", "error"]


async def test_a_receiver_sent_on_forwards_what_it_prefetched_first(certs: DevCerts) -> None:
    async def handler(conn: aqueduct.Connection) -> None:
        req = await conn.entrypoint.recv()
        rx: aqueduct.Receiver = req["data"]
        first = await _first_with_rest_prefetched(rx)
        async with req["reply"] as reply:
            await reply.send({"first": first, "rest": rx})  # the rest travels back through a relay

    async with running(certs, handler) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = aqueduct.channel()
        reply_tx, reply_rx = aqueduct.channel()
        await conn.entrypoint.send({"data": rx, "reply": reply_tx})
        _sends_in_one_turn(tx, range(N))
        await tx.finish()
        answer = await guard(reply_rx.recv())
        rest: aqueduct.Receiver = answer["rest"]
        assert [answer["first"]] + [v async for v in rest] == list(range(N))

"""Typed channels: `channel(T)`, typed entrypoints, attachments that arrive typed, validation at both edges.

Each rule is checked over a real connection (and locally where a local channel has the same rule): a value
of the wrong type fails before anything is sent; a received payload that does not fit raises
ValidationError naming channel, path, expected and received, and the channel and connection go on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import gc
from typing import Any, TypedDict

import msgspec
import pytest

import aqueduct
from aqueduct import OneshotSender, Receiver, Sender
from aqueduct.api.connection import link_of
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running


class Side(enum.Enum):
    BUY = "buy"
    SELL = "sell"


class Quote(msgspec.Struct):
    sym: str
    px: float


@dataclasses.dataclass
class Order:
    sym: str
    qty: int
    side: Side
    reply: OneshotSender[Quote]
    note: str | None = None


class Tick(TypedDict):
    sym: str
    px: float


@dataclasses.dataclass
class Subscribe:
    sym: str
    ticks: Sender[Tick]


async def test_local_typed_channel_checks_sends_and_keeps_objects() -> None:
    tx, rx = aqueduct.channel(Quote)
    q = Quote("X", 1.5)
    await tx.send(q)
    assert await rx.recv() is q  # a local pipe hands over the object itself
    with pytest.raises(aqueduct.ValidationError) as info:
        await tx.send({"sym": "X", "px": "high"})  # type: ignore[arg-type]
    assert info.value.path == "$.px" and info.value.expected == "float" and info.value.received == "str"
    assert isinstance(info.value, TypeError)
    with pytest.raises(aqueduct.ValidationError, match=r"at \$: Expected `object`, got `str`"):
        await tx.send("x")  # type: ignore[arg-type]
    tx.try_send(Quote("Y", 2.0))
    assert (await rx.recv()).sym == "Y"


async def test_untyped_channel_is_unchanged() -> None:
    tx, rx = aqueduct.channel()
    await tx.send("anything")
    assert await rx.recv() == "anything"
    assert tx.message_type is Any


async def _order_desk(conn: aqueduct.Connection[Receiver[Order]]) -> None:
    async for order in conn.entrypoint:
        assert isinstance(order, Order) and isinstance(order.side, Side)
        await order.reply.send(Quote(order.sym, 100.0 + order.qty))


async def test_typed_entrypoint_and_typed_attachment_over_a_connection(certs: DevCerts) -> None:
    async with running(certs, _order_desk, entrypoint=Order) as (url, _), \
            aqueduct.connect(url, ca=certs.ca, entrypoint=Order) as conn:
        reply_tx, reply_rx = aqueduct.oneshot(Quote)
        await conn.entrypoint.send(Order("ABC", 5, Side.BUY, reply_tx))
        quote = await guard(reply_rx.recv())
        assert quote == Quote("ABC", 105.0)
        # the wrong type never leaves: ValidationError before anything is sent, the connection goes on
        tx2, _ = aqueduct.oneshot(Quote)
        with pytest.raises(aqueduct.ValidationError, match=r"\$\.qty"):
            await conn.entrypoint.send(Order("ABC", "five", Side.BUY, tx2))  # type: ignore[arg-type]
        with pytest.raises(aqueduct.ValidationError, match="OneshotSender"):
            await conn.entrypoint.send(Order("ABC", 1, Side.BUY, aqueduct.channel(Quote)[0]))  # type: ignore[arg-type]
        reply_tx, reply_rx = aqueduct.oneshot(Quote)
        await conn.entrypoint.send(Order("DEF", 1, Side.SELL, reply_tx, note="still fine"))
        assert (await guard(reply_rx.recv())).px == 101.0


async def test_request_with_a_typed_reply(certs: DevCerts) -> None:
    async with running(certs, _order_desk, entrypoint=Order) as (url, _), \
            aqueduct.connect(url, ca=certs.ca, entrypoint=Order) as conn:
        quote = await aqueduct.request(conn.entrypoint, lambda reply: Order("Q", 2, Side.BUY, reply), timeout=5.0)
        assert isinstance(quote, Quote) and quote.px == 102.0


class Raw(TypedDict):
    sym: str


async def test_invalid_payload_from_an_untyped_peer_is_dropped_and_the_connection_goes_on(certs: DevCerts) -> None:
    seen: asyncio.Queue[Any] = asyncio.Queue()

    async def typed_server(conn: aqueduct.Connection[Receiver[Order]]) -> None:
        rx = conn.entrypoint
        while True:
            try:
                seen.put_nowait(await rx.recv())
            except aqueduct.ValidationError as exc:
                seen.put_nowait(exc)
            except aqueduct.ChannelFinished:
                return

    async with running(certs, typed_server, entrypoint=Order) as (url, _), \
            aqueduct.connect(url, ca=certs.ca) as conn:  # this client announces no type: it sends anything
        reply_tx, reply_rx = aqueduct.oneshot()
        await conn.entrypoint.send({"sym": "BAD", "qty": "lots", "side": "buy", "reply": reply_tx})
        error = await guard(seen.get())
        assert isinstance(error, aqueduct.ValidationError)
        assert error.path == "$.qty" and error.expected == "int" and error.received == "str"
        assert "channel" in error.channel and "invalid message on" in str(error)
        # the reply half inside the dropped message is dropped too: our side sees the channel end
        with pytest.raises(aqueduct.ChannelCancelled):
            await guard(reply_rx.recv())
        reply_tx, reply_rx = aqueduct.oneshot()
        await conn.entrypoint.send({"sym": "OK", "qty": 3, "side": "sell", "reply": reply_tx})
        order = await guard(seen.get())
        assert isinstance(order, Order) and order.qty == 3 and order.side is Side.SELL
        with pytest.raises(aqueduct.ValidationError):  # the attachment arrived typed: it checks what it sends
            await order.reply.send("not a quote")  # type: ignore[arg-type]
        await order.reply.send(Quote("OK", 1.0))
        assert await guard(reply_rx.recv()) == {"sym": "OK", "px": 1.0}  # (untyped on this side)


@dataclasses.dataclass
class Feed:
    policy: str
    ticks: Receiver[Tick]


async def test_on_invalid_drop_and_close(certs: DevCerts) -> None:
    got: asyncio.Queue[Any] = asyncio.Queue()

    async def server(conn: aqueduct.Connection[Receiver[Feed]]) -> None:
        async for feed in conn.entrypoint:
            feed.ticks.on_invalid = feed.policy  # type: ignore[assignment]
            try:
                async for tick in feed.ticks:  # the attachment arrived typed: a Receiver[Tick]
                    got.put_nowait(tick)
            except aqueduct.ValidationError as exc:
                got.put_nowait(exc)
            got.put_nowait("end")

    async with running(certs, server, entrypoint=Feed) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        for policy, expected in (("drop", [{"sym": "A", "px": 1.0}, {"sym": "C", "px": 3.0}, "end"]),
                                 ("close", [{"sym": "A", "px": 1.0}, aqueduct.ValidationError, "end"])):
            tx, rx = aqueduct.channel()
            await conn.entrypoint.send({"policy": policy, "ticks": rx})
            for item in ({"sym": "A", "px": 1.0}, {"sym": "B"}, {"sym": "C", "px": 3.0}):
                await tx.send(item)
            if policy == "drop":
                await tx.finish()
            results = [await guard(got.get()) for _ in expected]
            for result, want in zip(results, expected, strict=True):
                if isinstance(want, type):
                    assert isinstance(result, want) and result.path == "$" and "px" in str(result)
                else:
                    assert result == want
            if policy == "close":  # the closed receiver tells the sender
                assert await guard(tx.ended()) is aqueduct.EndReason.RECEIVER_DROPPED


async def test_request_timeout_and_cancellation_leave_nothing_behind(certs: DevCerts) -> None:
    held: asyncio.Queue[Order] = asyncio.Queue()

    async def slow_desk(conn: aqueduct.Connection[Receiver[Order]]) -> None:
        async for order in conn.entrypoint:
            held.put_nowait(order)  # answers nothing

    async with running(certs, slow_desk, entrypoint=Order) as (url, _), \
            aqueduct.connect(url, ca=certs.ca, entrypoint=Order) as conn:
        idle = _sizes(conn)
        with pytest.raises(aqueduct.Timeout):
            await aqueduct.request(conn.entrypoint, lambda r: Order("T", 1, Side.BUY, r), timeout=0.2)
        late = await guard(held.get())
        assert await guard(late.reply.ended()) is aqueduct.EndReason.RECEIVER_DROPPED  # the asker gave up
        with pytest.raises(aqueduct.ReceiverDropped):
            await late.reply.send(Quote("late", 0.0))
        task = asyncio.ensure_future(aqueduct.request(conn.entrypoint, lambda r: Order("C", 1, Side.BUY, r)))
        cancelled = await guard(held.get())
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await guard(cancelled.reply.ended()) is aqueduct.EndReason.RECEIVER_DROPPED
        del late, cancelled
        await _settle(conn, idle)


def _sizes(conn: aqueduct.Connection[Any]) -> dict[str, int]:
    return {k: v for k, v in link_of(conn).engine.state_sizes().items() if k != "timers"}


async def _settle(conn: aqueduct.Connection[Any], idle: dict[str, int]) -> None:
    """Until the client's engine tables are back at their idle sizes (bounded by the guard): the engine
    forgets a closed channel once the peer has heard of it, a network round trip later."""

    async def back() -> None:
        while _sizes(conn) != idle:
            gc.collect()
            await asyncio.sleep(0.01)  # (a poll of a condition, never a stand-in for one)

    await guard(back())


@dataclasses.dataclass
class Blob:
    name: str
    data: bytes


async def test_bytes_fields_stay_bytes_and_a_half_where_none_is_declared_is_refused(certs: DevCerts) -> None:
    got: asyncio.Queue[Any] = asyncio.Queue()

    async def server(conn: aqueduct.Connection[Receiver[Blob]]) -> None:
        async for blob in conn.entrypoint:
            got.put_nowait(blob)

    async with running(certs, server, entrypoint=Blob) as (url, _), \
            aqueduct.connect(url, ca=certs.ca, entrypoint=Blob) as conn:
        await conn.entrypoint.send(Blob("b", b"\x00\xff"))
        assert await guard(got.get()) == Blob("b", b"\x00\xff")
        with pytest.raises(aqueduct.ValidationError):
            await conn.entrypoint.send(Blob("b", aqueduct.channel()[0]))  # type: ignore[arg-type]

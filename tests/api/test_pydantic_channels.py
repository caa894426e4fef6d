"""Channels typed with pydantic models (the `pydantic` extra; the dev extra installs it, so this always runs).

Over a real connection: a pydantic entrypoint (its schema announced and agreed like any other type), values
arriving as model instances, channel halves as model fields arriving typed (a oneshot reply, a Sender
the peer sends on), an invalid payload from an untyped peer raising ValidationError with the field path
and leaving the channel and connection usable, and a wrong-typed value refused before anything is sent.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic
import pytest

import aqueduct
from aqueduct import OneshotSender, Receiver, Sender
from aqueduct.api.schema import canonical
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running


class Quote(pydantic.BaseModel):
    sym: str
    px: float


class Leg(pydantic.BaseModel):
    venue: str
    qty: int


class Order(pydantic.BaseModel):
    sym: str
    qty: int
    legs: list[Leg] = []
    reply: OneshotSender[Quote]


class Tick(pydantic.BaseModel):
    sym: str
    px: float


class Subscribe(pydantic.BaseModel):
    sym: str
    ticks: Sender[Tick]


def _desk(errors: asyncio.Queue[aqueduct.ValidationError]) -> Any:
    """A server that quotes every order (100 + its quantities) and puts what did not fit in `errors`."""

    async def serve(conn: aqueduct.Connection[Receiver[Order]]) -> None:
        rx = conn.entrypoint
        while True:
            try:
                order = await rx.recv()
            except aqueduct.ValidationError as exc:
                errors.put_nowait(exc)
                continue
            except aqueduct.ChannelFinished:
                return
            assert isinstance(order, Order) and all(isinstance(leg, Leg) for leg in order.legs)
            await order.reply.send(Quote(sym=order.sym, px=100.0 + order.qty + sum(leg.qty for leg in order.legs)))

    return serve


async def test_a_pydantic_entrypoint_with_a_typed_reply_over_a_connection(certs: DevCerts) -> None:
    errors: asyncio.Queue[aqueduct.ValidationError] = asyncio.Queue()
    async with running(certs, _desk(errors), entrypoint=Order) as (url, _), \
            aqueduct.connect(url, ca=certs.ca, entrypoint=Order) as conn:
        quote = await aqueduct.request(
            conn.entrypoint, lambda reply: Order(sym="A", qty=2, legs=[Leg(venue="X", qty=3)], reply=reply),
            timeout=5.0)
        assert isinstance(quote, Quote) and quote == Quote(sym="A", px=105.0)
        # the wrong type never leaves: refused here, field path and all, and the connection goes on
        with pytest.raises(aqueduct.ValidationError) as info:
            await conn.entrypoint.send("an order")  # type: ignore[arg-type]
        assert info.value.path == "$" and info.value.received == "str"
        broken = Order.model_construct(sym="B", qty=1, legs=[{"venue": "X", "qty": "many"}],
                                       reply=aqueduct.oneshot()[0])
        with pytest.raises(aqueduct.ValidationError) as info:  # (a model built without validation is checked too)
            await conn.entrypoint.send(broken)
        assert (info.value.path, info.value.expected, info.value.received) == ("$.legs[0].qty", "int", "str")
        with pytest.raises(aqueduct.ValidationError, match=r"\$\.reply"):  # a oneshot reply whose type is not Quote
            await conn.entrypoint.send(Order(sym="C", qty=1, reply=aqueduct.oneshot(int)[0]))  # type: ignore[arg-type]
        quote = await aqueduct.request(conn.entrypoint, lambda reply: Order(sym="D", qty=1, reply=reply), timeout=5.0)
        assert quote == Quote(sym="D", px=101.0)
        assert errors.empty()  # nothing invalid reached the server


async def test_an_invalid_payload_from_an_untyped_peer_names_the_field_and_the_connection_goes_on(
    certs: DevCerts,
) -> None:
    errors: asyncio.Queue[aqueduct.ValidationError] = asyncio.Queue()
    async with running(certs, _desk(errors), entrypoint=Order) as (url, _), \
            aqueduct.connect(url, ca=certs.ca) as conn:  # this client announces no type: it sends anything
        reply_tx, reply_rx = aqueduct.oneshot()
        await conn.entrypoint.send({"sym": "BAD", "qty": 1, "legs": [{"venue": "X", "qty": "lots"}],
                                    "reply": reply_tx})
        error = await guard(errors.get())
        assert isinstance(error, aqueduct.ValidationError) and isinstance(error, aqueduct.AqueductError)
        assert (error.path, error.expected, error.received) == ("$.legs[0].qty", "int", "str")
        assert "invalid message on" in str(error) and "Order" in str(error) and error.channel
        with pytest.raises(aqueduct.ChannelCancelled):  # the reply half inside the dropped message went with it
            await guard(reply_rx.recv())
        reply_tx, reply_rx = aqueduct.oneshot()
        await conn.entrypoint.send({"sym": "OK", "qty": 3, "reply": reply_tx})
        assert await guard(reply_rx.recv()) == {"sym": "OK", "px": 103.0}  # (untyped on this side)
        assert not conn.is_closed


async def test_a_sender_field_in_a_pydantic_model_arrives_typed(certs: DevCerts) -> None:
    refused: asyncio.Future[aqueduct.ValidationError] = asyncio.get_running_loop().create_future()

    async def feed(conn: aqueduct.Connection[Receiver[Subscribe]]) -> None:
        async for sub in conn.entrypoint:
            assert isinstance(sub, Subscribe)
            async with sub.ticks as ticks:  # a Sender[Tick]: it checks what it sends
                try:
                    await ticks.send({"sym": sub.sym})  # type: ignore[arg-type]
                except aqueduct.ValidationError as exc:
                    refused.set_result(exc)
                await ticks.send(Tick(sym=sub.sym, px=1.5))

    async with running(certs, feed, entrypoint=Subscribe) as (url, _), \
            aqueduct.connect(url, ca=certs.ca, entrypoint=Subscribe) as conn:
        tx, rx = aqueduct.channel()  # untyped: the field's declared type gives both halves Tick
        await conn.entrypoint.send(Subscribe(sym="S", ticks=tx))
        assert rx.message_type is Tick
        got = [tick async for tick in rx]
        assert got == [Tick(sym="S", px=1.5)] and isinstance(got[0], Tick)
        assert (await guard(refused)).path == "$.px"


def test_a_pydantic_model_builds_and_checks_its_half_fields_without_arbitrary_types() -> None:
    tx, _ = aqueduct.channel()
    with pytest.raises(pydantic.ValidationError, match="Expected `Sender`"):
        Subscribe(sym="S", ticks=aqueduct.oneshot()[0])  # a oneshot half is no stand-in for a multishot one
    with pytest.raises(pydantic.ValidationError):
        Subscribe(sym="S", ticks="not a half")  # type: ignore[arg-type]
    assert Subscribe(sym="S", ticks=tx).ticks is tx
    assert tx.message_type is Any  # (only sending it types it: building a model changes nothing)


def test_a_pydantic_schema_describes_its_halves_like_any_other_type() -> None:
    schema = canonical(Order)
    assert b'"x-aqueduct-channel":"OneshotSender"' in schema and b'"x-message"' in schema
    assert canonical(Order) == schema  # (stable: the fingerprint both sides compare)
    assert canonical(Subscribe) != canonical(Tick)

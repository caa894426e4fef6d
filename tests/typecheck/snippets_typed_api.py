# ruff: noqa: F841, E501  (mypy snippets: names bound only to be type-checked, long error markers)
# Checked by tests/typecheck/test_mypy.py, never run: each line whose comment starts with "E:" must get a
# mypy error containing the rest of that comment, and no other line may get one.
from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, assert_type

import aqueduct
from aqueduct import Connection, Message, OneshotReceiver, OneshotSender, Receiver, Sender


@dataclasses.dataclass
class Order:
    sym: str
    qty: int


@dataclasses.dataclass
class Quote:
    sym: str
    px: float


@dataclasses.dataclass
class Request:
    sym: str
    reply: OneshotSender[Quote]


async def channels() -> None:
    tx, rx = aqueduct.channel(Order)
    assert_type(tx, Sender[Order])
    assert_type(rx, Receiver[Order])
    await tx.send(Order("X", 1))
    await tx.send("x")  # E: No overload variant of "send" of "Sender" matches argument type "str"
    tx.try_send(Quote("X", 1.0))  # E: No overload variant of "try_send" of "Sender" matches argument type "Quote"
    o = await rx.recv()
    assert_type(o, Order)
    m = await rx.recv_message()
    assert_type(m, Message[Order])
    async for item in rx:
        assert_type(item, Order)
    assert_type(await tx.send(Order("X", 2), confirm=True), aqueduct.Outcome)
    assert_type(tx.try_send(Order("X", 3), confirm=True), asyncio.Future[aqueduct.Outcome])
    none = await tx.send(Order("X", 4))  # E: does not return a value
    n: int = await rx.recv()  # E: Incompatible types in assignment (expression has type "Order", variable has type "int")

    utx, urx = aqueduct.channel()
    assert_type(utx, Sender[Any])
    await utx.send("anything")
    await utx.send(42)
    assert_type(await urx.recv(), Any)

    mtx, _ = aqueduct.channel("unordered")
    assert_type(mtx, Sender[Any])
    ktx, _ = aqueduct.channel(mode="unreliable", capacity=4)
    assert_type(ktx, Sender[Any])
    aqueduct.channel(Order, capacity="big")  # E: No overload variant of "channel" matches


async def fanout() -> None:
    tx, _ = aqueduct.channel(Order)
    assert_type(tx.clone(), Sender[Order])
    bc = aqueduct.Broadcast(Quote)
    assert_type(bc.subscribe(), Receiver[Quote])
    await bc.send(Quote("X", 1.0))
    await bc.send(Order("X", 1))  # E: Argument 1 to "send" of "Broadcast" has incompatible type "Order"; expected "Quote"
    w = aqueduct.Watch(int, 0)
    assert_type(w.subscribe(), Receiver[int])
    await w.send("high")  # E: Argument 1 to "send" of "Watch" has incompatible type "str"; expected "int"
    await w.send(1)  # a watch's send is awaited as a broadcast's is (one shape)
    w.send(2)  # E: Value of type "Coroutine[Any, Any, None]" must be used
    untyped: aqueduct.Broadcast[Any] = aqueduct.Broadcast()
    assert_type(aqueduct.Broadcast(), aqueduct.Broadcast[Any])
    assert_type(aqueduct.Watch(None, "x"), aqueduct.Watch[Any])
    assert_type(aqueduct.Broadcast(aqueduct.OneOf(Order, Quote)).subscribe(), Receiver[Order | Quote])
    aqueduct.broadcast(Quote)  # E: Module has no attribute "broadcast"


async def oneshots() -> None:
    reply_tx, reply_rx = aqueduct.oneshot(Quote)
    assert_type(reply_tx, OneshotSender[Quote])
    assert_type(reply_rx, OneshotReceiver[Quote])
    await reply_tx.send(Order("X", 1))  # E: No overload variant of "send" of "OneshotSender" matches argument type "Order"
    assert_type(await reply_rx.recv(), Quote)
    plain: Sender[Quote] = reply_tx  # a oneshot sender is a Sender for typing


@dataclasses.dataclass
class Maybe:
    reply: OneshotSender[Quote] | None = None


async def endpoints() -> None:
    async with aqueduct.connect("aqueduct://h:1", ca="ca.pem", entrypoint=Request) as conn:
        assert_type(conn, Connection[Sender[Request]])
        assert_type(conn.entrypoint, Sender[Request])
        await conn.entrypoint.send(Order("X", 1))  # E: No overload variant of "send" of "Sender" matches argument type "Order"
        # the reply type is inferred from the request's `reply` field: no annotation needed
        quote = await aqueduct.request(conn.entrypoint, lambda reply: Request(sym="X", reply=reply))
        assert_type(quote, Quote)
        wrong: Order = await aqueduct.request(conn.entrypoint, lambda reply: Request(sym="X", reply=reply))  # E: Argument "reply" to "Request" has incompatible type "OneshotSender[Order]"; expected "OneshotSender[Quote]"
        # a request carrying its reply half in another field names the reply's type
        tape = await aqueduct.request(conn.entrypoint, lambda r: Request(sym="X", reply=r), reply_type=Quote)
        assert_type(tape, Quote)
        optional = await aqueduct.request(conn.entrypoint, lambda reply: Maybe(reply))  # an optional reply field
        assert_type(optional, Quote)
        await aqueduct.request(conn.entrypoint, lambda r: Request(sym="X", reply=r), reply_type=Order)  # E: Argument "reply" to "Request" has incompatible type "OneshotSender[Order]"; expected "OneshotSender[Quote]"
    async with aqueduct.connect("aqueduct://h:1", ca="ca.pem") as untyped:
        assert_type(untyped.entrypoint, Sender[Any])
    aqueduct.connect("aqueduct://h:1", cafile="ca.pem")  # E: No overload variant of "connect" matches
    token = {"authorization": "Bearer t"}  # a dict[str, str] of headers is accepted as it is
    async with aqueduct.connect("aqueduct://h:1", ca="ca.pem", headers=token) as authed:
        assert_type(authed.entrypoint, Sender[Any])
    async with aqueduct.serve("127.0.0.1", 0, cert="c", key="k", entrypoint=Request) as server:
        async for sconn in server:
            assert_type(sconn.entrypoint, Receiver[Request])
            req = await sconn.entrypoint.recv()
            assert_type(req.reply, OneshotSender[Quote])
            await req.reply.send(Quote("X", 1.0))
            await req.reply.send(1.0)  # E: No overload variant of "send" of "OneshotSender" matches argument type "float"


@dataclasses.dataclass
class Put:
    key: str
    value: int


@dataclasses.dataclass
class Get:
    key: str
    reply: OneshotSender[int | None]


async def unions() -> None:
    aqueduct.channel(Put | Get)  # E: Argument 1 to "channel" has incompatible type "UnionType
    aqueduct.channel(int | None)  # E: Argument 1 to "channel" has incompatible type "UnionType
    tx, rx = aqueduct.channel(aqueduct.OneOf(Put, Get))
    assert_type(tx, Sender[Put | Get])
    assert_type(await rx.recv(), Put | Get)
    await tx.send(Put("k", 1))
    await tx.send(Quote("X", 1.0))  # E: No overload variant of "send" of "Sender" matches argument type "Quote"
    maybe, _ = aqueduct.channel(aqueduct.OneOf(int, None))
    assert_type(maybe, Sender[int | None])
    one, _ = aqueduct.oneshot(aqueduct.OneOf(int, str))
    assert_type(one, OneshotSender[int | str])
    aqueduct.OneOf(Put)  # E: No overload variant of "OneOf" matches argument type "type[Put]"
    async with aqueduct.serve("127.0.0.1", 0, cert="c", key="k", entrypoint=aqueduct.OneOf(Put, Get)) as server:
        async for sconn in server:
            async for req in sconn.entrypoint:
                assert_type(req, Put | Get)
                if isinstance(req, Get):
                    await req.reply.send(None)
    async with aqueduct.connect("aqueduct://h:1", ca="ca.pem", entrypoint=aqueduct.OneOf(Put, Get)) as conn:
        assert_type(conn.entrypoint, Sender[Put | Get])
        value = await aqueduct.request(conn.entrypoint, lambda reply: Get("k", reply))
        assert_type(value, int | None)


async def reconnects() -> None:
    async for conn in aqueduct.reconnecting("aqueduct://h:1", ca="ca.pem", entrypoint=Request):
        assert_type(conn, Connection[Sender[Request]])
        await conn.entrypoint.send(Order("X", 1))  # E: No overload variant of "send" of "Sender" matches argument type "Order"
    async for plain in aqueduct.reconnecting("aqueduct://h:1", ca="ca.pem"):
        assert_type(plain, Connection[Sender[Any]])
    aqueduct.reconnecting("aqueduct://h:1", cafile="ca.pem")  # E: No overload variant of "reconnecting" matches
    aqueduct.chanel()  # E: Module has no attribute "chanel"

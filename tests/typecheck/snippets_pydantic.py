# ruff: noqa: F841, E501  (mypy snippets: names bound only to be type-checked, long error markers)
# Checked by tests/typecheck/test_mypy.py, never run: each line whose comment starts with "E:" must get a
# mypy error containing the rest of that comment, and no other line may get one. Pydantic models as message
# types, halves as their fields (pydantic is in the dev extra; its models type-check without a mypy plugin).
from __future__ import annotations

from typing import assert_type

import pydantic

import aqueduct
from aqueduct import Connection, OneshotSender, Receiver, Sender


class Quote(pydantic.BaseModel):
    sym: str
    px: float


class Ask(pydantic.BaseModel):
    sym: str
    reply: OneshotSender[Quote]


class Subscribe(pydantic.BaseModel):
    sym: str
    ticks: Sender[Quote]


async def channels() -> None:
    tx, rx = aqueduct.channel(Quote)
    assert_type(tx, Sender[Quote])
    assert_type(rx, Receiver[Quote])
    await tx.send(Quote(sym="X", px=1.0))
    await tx.send({"sym": "X", "px": 1.0})  # E: No overload variant of "send" of "Sender" matches argument type "dict[str, object]"
    await tx.send(Ask(sym="X", reply=aqueduct.oneshot(Quote)[0]))  # E: No overload variant of "send" of "Sender" matches argument type "Ask"
    q = await rx.recv()
    assert_type(q, Quote)
    n: int = await rx.recv()  # E: Incompatible types in assignment (expression has type "Quote", variable has type "int")
    async for item in rx:
        assert_type(item, Quote)


async def fields() -> None:
    reply_tx, reply_rx = aqueduct.oneshot(Quote)
    Ask(sym="X", reply=reply_tx)
    Ask(sym="X", reply=aqueduct.oneshot(int)[0])  # E: Argument "reply" to "Ask" has incompatible type "OneshotSender[int]"
    Ask(sym="X", reply=aqueduct.channel(Quote)[0])  # E: Argument "reply" to "Ask" has incompatible type "Sender[Quote]"
    Ask(sym=1, reply=reply_tx)  # E: Argument "sym" to "Ask" has incompatible type "int"
    ticks, _feed = aqueduct.channel(Quote)
    sub = Subscribe(sym="X", ticks=ticks)
    await sub.ticks.send(Quote(sym="X", px=2.0))
    await sub.ticks.send("x")  # E: No overload variant of "send" of "Sender" matches argument type "str"
    assert_type(await reply_rx.recv(), Quote)


async def service(conn: Connection[Sender[Ask]], server_side: Connection[Receiver[Ask]]) -> None:
    quote: Quote = await aqueduct.request(conn.entrypoint, lambda reply: Ask(sym="X", reply=reply), timeout=2.0)
    wrong: int = await aqueduct.request(conn.entrypoint, lambda reply: Ask(sym="X", reply=reply))  # E: Argument "reply" to "Ask" has incompatible type "OneshotSender[int]"; expected "OneshotSender[Quote]"
    await conn.entrypoint.send(Quote(sym="X", px=1.0))  # E: No overload variant of "send" of "Sender" matches argument type "Quote"
    async for ask in server_side.entrypoint:
        assert_type(ask, Ask)
        await ask.reply.send(Quote(sym=ask.sym, px=1.0))
        await ask.reply.send(ask)  # E: No overload variant of "send" of "OneshotSender" matches argument type "Ask"
    async with aqueduct.connect("aqueduct://127.0.0.1:1", entrypoint=Ask) as client:
        assert_type(client.entrypoint, Sender[Ask])

"""The typed-channel frictions of issue 29 item 7, at run time (tests/typecheck/snippets_typed_api.py holds
what mypy says of the same lines): a union of message types as `OneOf(A, B)` for a channel, an entrypoint
and a reconnecting client; `request` with its reply type inferred or named by `reply_type=`."""

from __future__ import annotations

import dataclasses

import msgspec
import pytest

import aqueduct
from aqueduct import OneOf, OneshotSender
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running


class Put(msgspec.Struct, tag=True):
    key: str
    value: int


class Get(msgspec.Struct, tag=True):
    key: str
    reply: OneshotSender[int | None]


@dataclasses.dataclass
class Fetch:
    key: str
    answer: OneshotSender[int | None]


class Store:
    """Server: a key-value store behind an entrypoint of Put | Get."""

    def __init__(self) -> None:
        self.data: dict[str, int] = {}

    async def __call__(self, conn: aqueduct.Connection) -> None:
        async for req in conn.entrypoint:
            if isinstance(req, Put):
                self.data[req.key] = req.value
            else:
                assert isinstance(req, Get), req  # converted to the member its tag names
                await req.reply.send(self.data.get(req.key))


def test_one_of_holds_the_union_and_wants_two_members() -> None:
    both = OneOf(Put, Get)
    assert both.type == Put | Get and both.members == (Put, Get)
    assert OneOf(int, None).type == int | None
    assert both == OneOf(Put, Get) and hash(both) == hash(OneOf(Put, Get))
    with pytest.raises(TypeError, match="two or more"):
        OneOf(Put)  # type: ignore[call-overload]


async def test_a_local_channel_of_a_union_takes_each_member_and_refuses_the_rest() -> None:
    tx, rx = aqueduct.channel(OneOf(int, None))
    await tx.send(1)
    await tx.send(None)
    with pytest.raises(aqueduct.ValidationError):
        await tx.send("one")  # type: ignore[call-overload]
    assert [await rx.recv(), await rx.recv()] == [1, None]
    assert tx.message_type == int | None


async def test_an_entrypoint_of_a_union_over_a_connection(certs: DevCerts) -> None:
    store = Store()
    async with running(certs, store, entrypoint=OneOf(Put, Get)) as (url, _), \
            aqueduct.connect(url, ca=certs.ca, entrypoint=OneOf(Put, Get)) as conn:
        await conn.entrypoint.send(Put("a", 1))
        value = await guard(aqueduct.request(conn.entrypoint, lambda reply: Get("a", reply)))
        assert value == 1
        assert await guard(aqueduct.request(conn.entrypoint, lambda reply: Get("b", reply))) is None
        with pytest.raises(aqueduct.ValidationError):
            await conn.entrypoint.send(Fetch("a", aqueduct.oneshot()[0]))  # type: ignore[call-overload]


async def test_a_union_entrypoint_is_one_schema_agreed_at_connect(certs: DevCerts) -> None:
    async with running(certs, Store(), entrypoint=OneOf(Put, Get)) as (url, _):
        with pytest.raises(aqueduct.SchemaMismatch):
            await guard(aqueduct.connect(url, ca=certs.ca, entrypoint=Put))  # one member is not the union


async def test_request_with_a_named_reply_type_checks_the_reply(certs: DevCerts) -> None:
    async def answer(conn: aqueduct.Connection) -> None:
        async for fetch in conn.entrypoint:
            await fetch["answer"].send("not an int")

    async with running(certs, answer) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        with pytest.raises(aqueduct.ValidationError):  # the reply is checked against reply_type
            await guard(aqueduct.request(conn.entrypoint, lambda r: {"key": "a", "answer": r}, reply_type=int))


async def test_reconnecting_with_an_entrypoint_type_gives_typed_connections(certs: DevCerts) -> None:
    store = Store()
    async with running(certs, store, entrypoint=OneOf(Put, Get)) as (url, _):
        async with aqueduct.reconnecting(url, ca=certs.ca, entrypoint=OneOf(Put, Get)) as conns:
            conn = await guard(anext(conns))
            assert conn.entrypoint.message_type == Put | Get
            await conn.entrypoint.send(Put("k", 7))
            assert await guard(aqueduct.request(conn.entrypoint, lambda reply: Get("k", reply))) == 7
            with pytest.raises(aqueduct.ValidationError):
                await conn.entrypoint.send("k")  # type: ignore[call-overload]

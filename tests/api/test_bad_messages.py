"""Every server pattern of the docs survives a client that sends one bad message and then good ones (issue 38).

The patterns, as the guides write them: the typed `desk` of docs/typed-channels.md (`async for ask in
conn.entrypoint` over `serve(..., entrypoint=Ask)`), its `store` over `OneOf(Put, Get)`, and the untyped
`handle` of README.md (which docs/getting-started.md includes). The client is untyped, so nothing checks its
values before they leave. What must hold (specs/DECISIONS.md, "Issue 38: typed receivers a handler can
iterate"): the handler's loop does not end silently (it ends with the error that ended it), it closes the
entrypoint whatever ended it, and the client learns at once: its next requests fail with a ChannelError
(the channel was refused) instead of waiting for a reader that is gone, and a confirmed send of the refused
value reports NACKED (decision API-34; each `on_invalid` policy's outcome is tested below). On d2316f7 the
good requests after the bad one hang (Timeout here).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import msgspec
import pytest

import aqueduct
from aqueduct import Connection, OneOf, OneshotSender, Receiver
from aqueduct.quic.certs import DevCerts

from .conftest import GUARD, guard


class Quote(msgspec.Struct):
    sym: str
    px: float


class Ask(msgspec.Struct):
    sym: str
    reply: OneshotSender[Quote]


class Put(msgspec.Struct, tag=True):
    key: str
    value: int


class Get(msgspec.Struct, tag=True):
    key: str
    reply: OneshotSender[int | None]


async def desk(conn: Connection[Receiver[Ask]]) -> None:  # docs/typed-channels.md, unchanged
    async for ask in conn.entrypoint:
        await ask.reply.send(Quote(ask.sym, 100.0))


async def store(conn: Connection[Receiver[Put | Get]]) -> None:  # docs/typed-channels.md, unchanged
    data: dict[str, int] = {}
    async for req in conn.entrypoint:
        if isinstance(req, Put):
            data[req.key] = req.value
        else:
            await req.reply.send(data.get(req.key))


async def handle(conn: aqueduct.Connection) -> None:  # README.md (and so docs/getting-started.md), unchanged
    async for msg in conn.entrypoint:
        async with msg["reply"] as reply:
            await reply.send({"time": "12:00"})


Make = Callable[[Any], Any]
PATTERNS: dict[str, tuple[Callable[[Any], Awaitable[None]], Any, Make, Make, type[BaseException]]] = {
    # name: (handler, entrypoint type, a bad request, a good request, what ends the handler's loop)
    "desk": (desk, Ask, lambda reply: {"sym": 7, "reply": reply}, lambda reply: {"sym": "X", "reply": reply},
             aqueduct.ValidationError),
    "store": (store, OneOf(Put, Get), lambda reply: {"type": "Get", "key": 1, "reply": reply},
              lambda reply: {"type": "Get", "key": "a", "reply": reply}, aqueduct.ValidationError),
    "readme": (handle, None, lambda reply: {"ask": "time", "answer": reply}, lambda reply: {"ask": "time",
                                                                                           "reply": reply},
               KeyError),
}


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
async def test_a_documented_server_refuses_a_bad_message_and_its_client_learns_at_once(
    certs: DevCerts, pattern: str
) -> None:
    handler, entrypoint, bad, good, ends_with = PATTERNS[pattern]
    ended: asyncio.Future[type[BaseException] | None] = asyncio.get_running_loop().create_future()

    async def run(conn: aqueduct.Connection) -> None:
        try:
            await handler(conn)
        except Exception as exc:  # (its own task would report it; the test keeps its type, not its traceback,
            ended.set_result(type(exc))  # which holds the handler's locals: the bad message's reply sender)
        else:
            ended.set_result(None)

    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, entrypoint=entrypoint) as server:
        tasks: set[asyncio.Task[None]] = set()

        async def accept() -> None:
            async for conn in server:
                tasks.add(asyncio.ensure_future(run(conn)))

        acceptor = asyncio.ensure_future(accept())
        url = f"aqueduct://{server.address[0]}:{server.address[1]}"
        try:
            async with aqueduct.connect(url, ca=certs.ca) as conn:
                reply_tx, reply_rx = aqueduct.oneshot()
                await conn.entrypoint.send(bad(reply_tx))
                with pytest.raises(aqueduct.ChannelError):  # the bad request's reply channel ends, promptly
                    await reply_rx.recv(timeout=GUARD)
                assert await guard(ended) is ends_with  # the loop ended with its cause, not silently
                for _ in range(3):  # and every later request fails at once: nobody waits on a gone reader
                    with pytest.raises(aqueduct.ChannelError):
                        await aqueduct.request(conn.entrypoint, good, timeout=GUARD)
                assert await guard(conn.entrypoint.ended()) is aqueduct.EndReason.RECEIVER_DROPPED
        finally:
            acceptor.cancel()
            for task in tasks:
                task.cancel()


@contextlib.asynccontextmanager
async def _refused_send(certs: DevCerts, handler: Callable[[Any], Awaitable[None]]
                        ) -> AsyncIterator[tuple[Connection[Any], aqueduct.Outcome]]:
    """A server running `handler` on its one connection, and a client whose confirmed send of an ill-typed Ask
    (`sym` an int) was answered: yields the client's connection and that send's outcome."""
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, entrypoint=Ask) as server:
        async def serve_one() -> None:
            await handler(await server.accept())

        acceptor = asyncio.ensure_future(serve_one())
        url = f"aqueduct://{server.address[0]}:{server.address[1]}"
        try:
            async with aqueduct.connect(url, ca=certs.ca) as conn:
                reply_tx, _reply_rx = aqueduct.oneshot()
                yield conn, await guard(conn.entrypoint.send({"sym": 7, "reply": reply_tx}, confirm=True))
        finally:
            acceptor.cancel()


async def test_a_confirmed_send_of_a_refused_value_does_not_report_acked(certs: DevCerts) -> None:
    async with _refused_send(certs, desk) as (_, outcome):
        assert outcome is aqueduct.Outcome.NACKED, outcome


async def _recv_loop(conn: Connection[Receiver[Ask]], policy: str) -> None:
    """A handler's own `recv()` loop under `on_invalid=policy` that goes on after a ValidationError (until the
    receiver is closed)."""
    rx = conn.entrypoint
    rx.on_invalid = policy  # type: ignore[assignment]
    while True:
        try:
            ask = await rx.recv()
        except aqueduct.ValidationError:
            continue
        except aqueduct.ChannelError:
            return
        await ask.reply.send(Quote(ask.sym, 100.0))


HANDLERS: dict[str, tuple[Callable[[Any], Awaitable[None]], aqueduct.Outcome]] = {
    # how the handler reads: (the handler, what the refused value's confirmed send reports)
    "async for": (desk, aqueduct.Outcome.NACKED),  # the loop ends and closes: nacked
    "close": (lambda conn: _recv_loop(conn, "close"), aqueduct.Outcome.NACKED),  # closed at once: nacked
    "drop": (lambda conn: _recv_loop(conn, "drop"), aqueduct.Outcome.ACKED),  # skipped, read on: acked
    "raise, then recv": (lambda conn: _recv_loop(conn, "raise"), aqueduct.Outcome.ACKED),  # read on: acked
}


@pytest.mark.parametrize("how", sorted(HANDLERS))
async def test_each_policy_has_its_ack_outcome(certs: DevCerts, how: str) -> None:
    """Decision API-34: a refused message is nacked by the close that ends a reader, and acked by a reader that
    goes on past it (the wire cannot nack one reliable message and keep the channel); a good request after it
    is answered exactly when the reader went on."""
    handler, expected = HANDLERS[how]
    async with _refused_send(certs, handler) as (conn, outcome):
        assert outcome is expected
        good = aqueduct.request(conn.entrypoint, lambda reply: {"sym": "X", "reply": reply}, timeout=GUARD)
        if expected is aqueduct.Outcome.ACKED:
            assert (await good)["sym"] == "X"
            later_tx, later_rx = aqueduct.oneshot()
            assert await guard(conn.entrypoint.send({"sym": "Y", "reply": later_tx},
                                                    confirm=True)) is aqueduct.Outcome.ACKED
            assert (await guard(later_rx.recv()))["sym"] == "Y"
        else:
            with pytest.raises(aqueduct.ChannelError):
                await good

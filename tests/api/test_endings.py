"""How a channel ends, as the application sees it (issue 29 item 7, issue 27 item 4).

`recv()` on a finished channel raises `ChannelFinished` (a named AqueductError, no StopAsyncIteration that an
async generator would turn into RuntimeError) while `async for` just ends; one table (`errors.ENDINGS`) maps
every `EndReason` to the error raised and the outcome reported, and the docs show that table; a server's
handler loop over `conn.entrypoint` ends the same way whether its client closed, the server drained (idle
or at the end of its grace period) or the server shut down, leaving no "Task exception was never retrieved"
(only a connection lost from the far side raises).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import aqueduct
from aqueduct import CloseCode, EndReason, Outcome
from aqueduct.errors import ENDINGS, ERROR_FOR_REASON, OUTCOME_FOR_END, ChannelError
from aqueduct.quic.certs import DevCerts

from .conftest import guard

DOCS = Path(__file__).resolve().parents[2] / "docs" / "typed-channels.md"


async def test_recv_after_a_finish_raises_channel_finished_and_async_for_ends() -> None:
    tx, rx = aqueduct.channel(int)
    await tx.send(1)
    await tx.finish()
    assert [m async for m in rx] == [1]
    with pytest.raises(aqueduct.ChannelFinished) as info:
        await rx.recv()
    assert isinstance(info.value, aqueduct.ChannelError) and info.value.reason is EndReason.FINISHED
    assert not isinstance(info.value, StopAsyncIteration)


async def test_a_finished_channel_inside_an_async_generator_is_no_runtime_error() -> None:
    tx, rx = aqueduct.channel(int)

    async def doubled() -> AsyncIterator[int]:
        while True:
            yield 2 * await rx.recv()

    await tx.send(1)
    await tx.finish()
    gen = doubled()
    assert await anext(gen) == 2
    with pytest.raises(aqueduct.ChannelFinished):  # a bare StopAsyncIteration here became a RuntimeError
        await anext(gen)


async def test_recv_on_a_finished_networked_channel(certs: DevCerts) -> None:
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key) as server:
        async with aqueduct.connect(f"aqueduct://127.0.0.1:{server.address[1]}", ca=certs.ca) as conn:
            sconn = await guard(server.accept())
            tx, rx = aqueduct.channel()
            await conn.entrypoint.send({"rx": rx})
            got = (await guard(sconn.entrypoint.recv()))["rx"]
            await tx.send("one")
            await tx.finish()
            assert [m async for m in got] == ["one"]
            with pytest.raises(aqueduct.ChannelFinished):
                await guard(got.recv())


def test_one_table_maps_every_ending_to_its_error_and_outcome() -> None:
    assert set(ENDINGS) == set(EndReason)
    for reason, ending in ENDINGS.items():
        assert ending.error.reason is reason  # the error names the ending it stands for
        assert OUTCOME_FOR_END[reason] is ending.outcome
    assert ERROR_FOR_REASON == {r: e.error for r, e in ENDINGS.items() if r is not EndReason.FINISHED}
    assert {e.error for e in ENDINGS.values()} == {c for c in _subclasses(ChannelError)}
    assert ENDINGS[EndReason.RECEIVER_DROPPED].outcome is Outcome.RECEIVER_DROPPED


def _subclasses(cls: type[Any]) -> set[type[Any]]:
    """Subclasses of `cls` in aqueduct.errors (ChannelError's own family, not the codec's or schema's)."""
    found = set()
    for sub in cls.__subclasses__():
        if sub.__module__ == "aqueduct.errors":
            found |= {sub, *_subclasses(sub)}
    return found


def endings_table() -> str:
    """The docs' table of how a channel ends, made from ENDINGS."""
    rows = ["| how it ended | the error raised | a confirmed send's outcome | on the wire |", "|---|---|---|---|"]
    for reason, ending in ENDINGS.items():
        rows.append(f"| `EndReason.{reason.name}` | `{ending.error.__name__}` | `Outcome.{ending.outcome.name}` "
                    f"| {ending.wire} |")
    return "\n".join(rows)


def test_the_docs_show_the_one_table() -> None:
    assert endings_table() in DOCS.read_text(), f"docs/typed-channels.md should hold:\n{endings_table()}"


def test_connect_error_is_not_a_channel_error() -> None:
    assert not issubclass(aqueduct.ConnectError, aqueduct.ChannelError)
    assert not issubclass(aqueduct.AuthenticationFailed, aqueduct.ChannelError)
    assert issubclass(aqueduct.AuthenticationFailed, aqueduct.ConnectError)


class Handlers:
    """The docs' handler pattern: one task per connection, `async for msg in conn.entrypoint`, nobody awaits it."""

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[None]] = []
        self.started = asyncio.Event()

    def accept(self, server: aqueduct.Server) -> asyncio.Task[None]:
        async def loop() -> None:
            async for conn in server:
                self.tasks.append(asyncio.ensure_future(self.handle(conn)))

        return asyncio.ensure_future(loop())

    async def handle(self, conn: aqueduct.Connection) -> None:
        async for msg in conn.entrypoint:
            if "hold" in msg:
                self.started.set()
                async for _ in msg["hold"]:  # a channel the client keeps open (the busy case)
                    pass
            else:
                self.started.set()

    async def ended(self) -> list[BaseException | None]:
        done, _ = await guard(asyncio.wait(self.tasks))
        return [task.exception() for task in done]


@pytest.mark.parametrize("how", ["client closes", "drain, idle", "drain, grace over", "server exits"])
async def test_a_handler_loop_ends_the_same_way_for_every_ending_of_this_side(certs: DevCerts, how: str) -> None:
    handlers = Handlers()
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key) as server:
        acceptor = handlers.accept(server)
        conn = await guard(aqueduct.connect(f"aqueduct://127.0.0.1:{server.address[1]}", ca=certs.ca))
        held_tx, held_rx = aqueduct.channel()
        await conn.entrypoint.send({"hold": held_rx} if how == "drain, grace over" else {"hello": 1})
        await guard(handlers.started.wait())
        if how == "client closes":
            await conn.close()
        elif how == "drain, idle":
            await guard(server.drain(grace=60.0))
        elif how == "drain, grace over":
            await guard(server.drain(grace=0.05))
    # (leaving `serve` closed what was still open: the "server exits" case)
    assert await handlers.ended() == [None]
    acceptor.cancel()
    await conn.close()
    del held_tx


async def test_a_connection_lost_from_the_far_side_still_raises(certs: DevCerts) -> None:
    handlers = Handlers()
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key) as server:
        acceptor = handlers.accept(server)
        conn = await guard(aqueduct.connect(f"aqueduct://127.0.0.1:{server.address[1]}", ca=certs.ca))
        await conn.entrypoint.send({"hello": 1})
        await guard(handlers.started.wait())
        await conn.close(code=CloseCode.INTERNAL_ERROR, reason="crashed")
        [error] = await handlers.ended()
        assert isinstance(error, aqueduct.ConnectionLost) and error.code == CloseCode.INTERNAL_ERROR
        acceptor.cancel()

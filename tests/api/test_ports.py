"""The port of a half (halves/ports.py): one object says where a half talks, and it changes only by the moves of
PORT_MOVES; a local pair shares one port, ending a half keeps where it talked, moving one swaps the ports of
both halves in one step, and a move the table does not connect raises IllegalTransition."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

import aqueduct
from aqueduct.api.halves import PORT_MOVES, Closed, LocalPort, Moved, NetPort, Unwired, channel
from aqueduct.core.transitions import IllegalTransition
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running


def test_the_table_names_every_port_and_a_moved_half_is_final() -> None:
    assert set(PORT_MOVES) == {Unwired, LocalPort, NetPort, Closed, Moved}
    assert all(to <= set(PORT_MOVES) for to in PORT_MOVES.values())
    assert PORT_MOVES[Moved] == frozenset()
    assert LocalPort not in PORT_MOVES[NetPort]  # a networked half never goes back to a pipe


async def test_a_local_pair_shares_one_port_and_ending_keeps_where_it_talked() -> None:
    tx, rx = channel()
    assert isinstance(tx.port, LocalPort) and tx.port is rx.port
    assert tx.port.drops and tx.port.link is None and tx.port.done is None
    await tx.finish()
    ended = tx.port
    assert isinstance(ended, Closed) and ended.done == "finished" and ended.was is rx.port
    assert not ended.drops  # a local half ended by hand has nothing left to tell when collected
    rx.close()
    assert isinstance(rx.port, Closed) and rx.port.done == "closed"


async def test_a_move_the_table_does_not_connect_raises() -> None:
    tx, rx = channel()
    tx.mark_moved()
    assert isinstance(tx.port, Moved) and tx.port.done == "moved into a message"
    with pytest.raises(IllegalTransition):
        tx.bind(object(), 0)  # type: ignore[arg-type]
    with pytest.raises(IllegalTransition):
        tx.join(LocalPort(rx.port.pipe))  # type: ignore[union-attr]
    rx.close()
    with pytest.raises(IllegalTransition):
        rx.mark_moved()  # a closed half cannot travel (attach_kind refuses it before this)


async def test_moving_a_half_swaps_both_ports_and_a_networked_end_keeps_its_drop(certs: DevCerts) -> None:
    got: asyncio.Queue[Any] = asyncio.Queue()

    async def handler(conn: aqueduct.Connection) -> None:
        async for req in conn.entrypoint:
            got.put_nowait(await req["rx"].recv())

    async with running(certs, handler) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = channel()
        await tx.send("queued before the move")
        await conn.entrypoint.send({"rx": rx})
        assert isinstance(rx.port, Moved) and not rx.port.drops
        net = tx.port
        assert isinstance(net, NetPort) and net.pipe is None and net.drops and tx.networked
        assert await guard(got.get()) == "queued before the move"
        tx.cancel()
        ended = tx.port
        assert isinstance(ended, Closed) and ended.was is net
        assert ended.drops  # dropping it still lets the engine forget the channel
        assert tx.link is net.link and tx.networked
        del tx, rx
        gc.collect()

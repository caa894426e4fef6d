"""A send checks, before it writes, whether its stream or the connection is blocked (StreamWrites.send_blocked,
quic/writes.py): a write on another channel since the last send is seen."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.api.halves.wiring import open_handle
from aqueduct.core.app import Delivery
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.protocol import AqueductProtocol
from aqueduct.quic.settings import TransportSettings

from .conftest import guard, running


def _true_unacked(p: AqueductProtocol) -> int:
    return sum(len(s.sender._buffer) for s in p.quic._streams.values()) + p.writes.held_bytes


async def test_a_send_waits_before_writing_when_another_channel_filled_the_connection_since(certs: DevCerts) -> None:
    limit = 20_000
    got: list[bytes] = []
    drained: list[int] = []
    done = asyncio.Event()

    async def drain(rx: aqueduct.Receiver) -> None:
        drained.append(sum([1 async for _ in rx]))

    async def handler(conn: aqueduct.Connection) -> None:
        tasks = []
        async for msg in conn.entrypoint:
            if isinstance(msg, dict):
                tasks.append(asyncio.ensure_future(drain(msg["b"])))
            else:
                got.append(msg)
        await asyncio.gather(*tasks)
        done.set()

    settings = replace(TransportSettings(), connection_send_buffer=limit)
    async with (
        running(certs, handler) as (url, _server),
        aqueduct.connect(url, ca=certs.ca, settings=settings) as conn,
    ):
        p = link_of(conn).protocol
        tx_b, rx_b = aqueduct.channel()
        await conn.entrypoint.send({"b": rx_b})
        await tx_b.send(b"open")
        await conn.entrypoint.send(b"a1")  # not blocked: the next send to this stream may skip its check...
        filled = 0
        try:
            while True:  # ...unless, as here, another channel writes (one loop turn: no acks shrink anything)
                tx_b.try_send(b"x" * 500)
                filled += 1
        except aqueduct.WouldBlock:
            pass
        assert p.connection_blocked()
        before = _true_unacked(p)
        waiting = link_of(conn).send(open_handle(conn.entrypoint), b"a2", Delivery.ORDERED)
        assert waiting is not None
        assert _true_unacked(p) == before  # nothing written over the bound: it waits first
        await guard(waiting)
        await tx_b.finish()
        await conn.entrypoint.finish()
        await guard(done.wait())
    assert got == [b"a1", b"a2"]
    assert drained == [filled + 1]

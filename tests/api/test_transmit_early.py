"""A producer that writes much in one loop turn has it sent as it goes, not only when the turn ends."""

from __future__ import annotations

import asyncio

import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.protocol import TRANSMIT_EARLY

from .conftest import guard, running


async def test_writes_over_the_early_threshold_leave_within_the_turn(certs: DevCerts) -> None:
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def handler(conn: aqueduct.Connection) -> None:
        n = 0
        async for _ in (await conn.entrypoint.recv())["data"]:
            n += 1
        done.set_result(n)

    async with running(certs, handler) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send({"data": rx})
        quic = link_of(conn).protocol._quic
        await guard(link_of(conn).protocol.wait_while(lambda: quic._loss.bytes_in_flight > 0))
        chunk = b"x" * 1024
        sent_at: list[int] = []
        for i in range(2 * TRANSMIT_EARLY // len(chunk)):  # one loop turn: nothing else runs meanwhile
            tx.try_send(chunk)
            if quic._loss.bytes_in_flight and not sent_at:
                sent_at.append(i)
        assert sent_at, "nothing left before the turn ended"
        assert sent_at[0] * len(chunk) <= TRANSMIT_EARLY  # ... and it left once the threshold was reached
        small = link_of(conn).protocol
        before = small._quic._loss.bytes_in_flight
        tx.try_send(b"y")  # far below the threshold: waits for the turn's end, with whatever else this turn writes
        assert small._quic._loss.bytes_in_flight == before
        await tx.finish()
        assert await guard(done) == 2 * TRANSMIT_EARLY // len(chunk) + 1

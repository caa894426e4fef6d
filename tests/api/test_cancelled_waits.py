"""A wait given up leaves nothing behind: `Sender.ended()` under a timeout, repeated, does not grow the
connection's table of waiters (each cancelled wait used to leave its future and list behind for good)."""

from __future__ import annotations

import asyncio

import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running


async def test_cancelled_waits_for_a_sender_end_leave_no_waiters(certs: DevCerts) -> None:
    held: asyncio.Queue[aqueduct.Receiver[int]] = asyncio.Queue()

    async def server(conn: aqueduct.Connection) -> None:
        async for msg in conn.entrypoint:
            held.put_nowait(msg["rx"])

    async with running(certs, server) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = aqueduct.channel(int)
        await conn.entrypoint.send({"rx": rx})
        far = await guard(held.get())
        for _ in range(100):
            ended = asyncio.ensure_future(tx.ended())
            await asyncio.sleep(0)
            ended.cancel()
        await asyncio.gather(ended, return_exceptions=True)
        assert link_of(conn)._waiters == {}
        far.close()
        assert await guard(tx.ended()) is aqueduct.EndReason.RECEIVER_DROPPED

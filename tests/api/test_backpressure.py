"""Backpressure end to end: a stalled reader blocks the sender (WouldBlock, a waiting send), then it proceeds."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import aqueduct
from aqueduct import WouldBlock
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running

WINDOW = 64 * 1024
SETTINGS = aqueduct.TransportSettings(stream_window=WINDOW, connection_window=2 * WINDOW, send_buffer=WINDOW)
CHUNK = b"\x01" * 4096


async def test_send_blocks_while_the_reader_stalls_then_proceeds(certs: DevCerts) -> None:
    release = asyncio.Event()
    delivered: asyncio.Queue[int] = asyncio.Queue()

    async def handler(conn: aqueduct.Connection) -> None:
        req = await conn.entrypoint.recv()
        await release.wait()  # the application does not read yet
        count = 0
        async for _ in req["data"]:
            count += 1
        delivered.put_nowait(count)

    async with running(certs, handler, settings=SETTINGS) as (url, _), aqueduct.connect(
        url, ca=certs.ca, settings=SETTINGS
    ) as conn:
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send({"data": rx})
        sent = 0
        blocked = False
        for _ in range(10_000):  # bounded: far more than window + send buffer
            try:
                tx.try_send(CHUNK)
                sent += 1
            except WouldBlock:
                blocked = True
                break
            await asyncio.sleep(0)  # let acks arrive; the bound on unacked bytes is what stops us
        assert blocked
        # The peer has taken nothing, so at most its windows plus our send buffer left this side.
        assert sent * len(CHUNK) <= 2 * WINDOW + WINDOW + 2 * len(CHUNK)
        pending = asyncio.ensure_future(tx.send(CHUNK))
        await asyncio.sleep(0)
        assert not pending.done()
        release.set()
        await guard(pending)
        await tx.finish()
        assert await guard(delivered.get()) == sent + 1


def test_receiver_rss_stays_under_window_plus_constant() -> None:
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "quic_backpressure.py"
    out = subprocess.run(
        [sys.executable, str(script), "--seconds", "3", "--window-kib", "1024", "--message-kib", "16"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    stats = json.loads(out)
    print(stats)
    # The producer can only be ahead of the slow reader by the receive window (plus messages in flight).
    assert stats["sent_mib"] - stats["taken_mib"] <= stats["window_mib"] + 0.5
    assert stats["rss_growth_mib"] < stats["window_mib"] + 16

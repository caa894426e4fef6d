"""Backpressure end to end: a stalled reader blocks the sender (WouldBlock, a waiting send), then it proceeds."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

import aqueduct
from aqueduct import WouldBlock
from aqueduct.api.connection import link_of
from aqueduct.api.halves.wiring import open_handle
from aqueduct.core.config import EngineConfig
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running

WINDOW = 64 * 1024
SETTINGS = aqueduct.TransportSettings(stream_window=WINDOW, connection_window=2 * WINDOW, send_buffer=WINDOW)
CHUNK = b"\x01" * 4096


SMALL = aqueduct.TransportSettings(stream_window=8192, connection_window=16384, send_buffer=8192)


@pytest.mark.parametrize(
    ("chunk", "settings"), [(CHUNK, SETTINGS), (b"\x02", SMALL)], ids=["4KiB", "1B"]
)
async def test_send_blocks_while_the_reader_stalls_then_proceeds(
    certs: DevCerts, chunk: bytes, settings: aqueduct.TransportSettings
) -> None:
    """1-byte messages too: a queue cap below what the window admits (500 here) must not close the connection."""
    release = asyncio.Event()
    delivered: asyncio.Queue[int] = asyncio.Queue()

    async def handler(conn: aqueduct.Connection) -> None:
        req = await conn.entrypoint.recv()
        await release.wait()  # the application does not read yet
        count = 0
        async for _ in req["data"]:
            count += 1
        delivered.put_nowait(count)

    low_cap = EngineConfig(max_receiver_queue_messages=500)
    async with running(certs, handler, settings=settings, engine_config=low_cap) as (url, _), aqueduct.connect(
        url, ca=certs.ca, settings=settings
    ) as conn:
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send({"data": rx})
        protocol = link_of(conn).protocol

        def stream_id() -> int:
            sid = link_of(conn)._last_stream.get(open_handle(tx))  # type: ignore[arg-type]
            assert sid is not None
            return sid

        def stalled() -> bool:
            """All the peer's window allows was sent and acked, and what is left fills our send buffer."""
            stream = protocol.quic._streams[stream_id()]
            out = stream.sender
            window_used = out.highest_offset >= stream.max_stream_data_remote
            return window_used and out._buffer_start == out.highest_offset and protocol.send_blocked(stream_id())

        sent = 0
        for _ in range(100_000):  # bounded: far more than window + send buffer
            try:
                tx.try_send(chunk)
                sent += 1
                await asyncio.sleep(0)  # a turn of the loop: packets go out, acks come in
            except WouldBlock:
                if stalled():
                    break
                # Blocked for now, but acks of in-window data may still free the buffer: wait for a change.
                await guard(protocol.wait_while(lambda: protocol.send_blocked(stream_id()) and not stalled()))
        assert stalled()
        # The peer has taken nothing, so at most its window plus our send buffer left this side.
        window, buffer = settings.stream_window, settings.send_buffer
        assert sent * len(chunk) <= window + buffer + 2 * len(CHUNK)
        assert not conn.is_closed  # small messages too: backpressure, not a queue-limit close
        pending = asyncio.ensure_future(tx.send(chunk))
        await asyncio.sleep(0)
        assert not pending.done()
        release.set()
        await guard(pending)
        await tx.finish()
        assert await guard(delivered.get()) == sent + 1


def test_receiver_rss_stays_under_window_plus_constant() -> None:
    """A producer offering 1 GiB against a reader taking one 4 KiB message per 20 ms, for 4 s, in two processes.

    (benchmarks/quic_backpressure.py runs the full-length version.) Without pacing the producer gets
    megabytes ahead here (measured: 2.4 MiB); with it, at most the window plus our send buffer.
    """
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "quic_backpressure.py"
    out = subprocess.run(
        [sys.executable, str(script), "--seconds", "4", "--window-kib", "256", "--message-kib", "4",
         "--interval", "0.02"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    stats = json.loads(out)
    print(stats)
    send_buffer_mib = aqueduct.TransportSettings().send_buffer / (1024 * 1024)
    assert stats["sent_mib"] - stats["taken_mib"] <= stats["window_mib"] + send_buffer_mib + 0.1
    assert stats["rss_growth_mib"] < stats["window_mib"] + 16


async def test_sends_that_open_streams_wait_for_the_peers_stream_limit(certs: DevCerts) -> None:
    """Unordered messages open a stream each: past the peer's MAX_STREAMS, aioquic would hold the new streams
    (and walk all of them per packet); a send waits instead, holding at most one blocked stream."""
    total = 400
    got: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def handler(conn: aqueduct.Connection) -> None:
        rx = (await conn.entrypoint.recv())["data"]
        n = 0
        async for _ in rx:
            n += 1
        got.set_result(n)

    async with running(certs, handler) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = aqueduct.channel(aqueduct.Delivery.UNORDERED)
        await conn.entrypoint.send({"data": rx})
        quic = link_of(conn).protocol._quic
        sent = 0
        with pytest.raises(WouldBlock):  # all in one loop turn: the peer cannot raise its limit meanwhile
            for _ in range(total):
                tx.try_send(b"u")
                sent += 1
                assert len(quic._streams_blocked_uni) <= 1
        assert 0 < sent < total
        most = 0
        for _ in range(total - sent):
            await tx.send(b"u")
            most = max(most, len(quic._streams_blocked_uni))
        assert most <= 1
        await tx.finish()
        assert await guard(got) == total

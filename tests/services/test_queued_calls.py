"""What a call queued for a busy service costs the server (issue 36, "Also seen": ~2.8 KB of engine state per
queued call against a few dozen bytes of frame, 40-60 MB per connection inside the window).

Each call carries its reply channel: a half, which on arrival costs the server a channel's engine state (its
sender record and the control stream it opens, in the engine and in aioquic). `max_receiver_queue_halves`
bounds the halves of messages queued in one receiver; past it the stream stalls with the rest of its frames
unprocessed (no channel made for them). Measured with tracemalloc in this process, which holds only the
server: the client is a process of its own (queued_calls_client.py), so its state is not counted."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import aqueduct
from aqueduct import EngineConfig
from aqueduct.api.connection import link_of
from aqueduct.quic.certs import DevCerts

from .calc import Calc

ROOT = Path(__file__).resolve().parents[2]
WAIT = 120.0
"""A failure guard (a client process starting on a loaded machine), not a measure."""


async def guard(aw: Any) -> Any:
    return await asyncio.wait_for(aw, WAIT)
N = 10_000
"""Calls queued behind the one the server holds."""


def calls_seen(link: Any) -> int:
    """Calls behind the running one that reached the server: each processed one made its reply sender (queued in
    the engine or prefetched by the receiver), the others are parsed and stalled in their stream (internals,
    read for an exact count)."""
    engine = link.engine
    stalled = sum(len(rec.stalled) for rec in engine._streams._records.values() if rec.stalled)
    return int(engine.state_sizes()["senders"] - 1 + stalled)


async def bytes_per_queued_call(certs: DevCerts, **serve_kw: Any) -> tuple[float, dict[str, int]]:
    """Serve a Calc running one call at a time, let a client process queue N calls behind a call the server
    holds, and return the server's memory per queued call (tracemalloc) and its state sizes then."""
    impl = Calc()
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, service=impl,
                              max_concurrent_calls=1, **serve_kw) as server:
        client = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.services.queued_calls_client", str(server.address[1]), str(certs.ca),
            str(N), cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert client.stdin is not None and client.stdout is not None
        try:
            assert await guard(client.stdout.readline()) == b"waiting\n"
            await guard(impl.started.get())
            (server_conn,) = server.connections
            link = link_of(server_conn)
            gc.collect()
            tracemalloc.start()
            try:
                client.stdin.write(b"go\n")
                assert await guard(client.stdout.readline()) == b"sent\n"

                async def arrived() -> None:
                    while calls_seen(link) < N:
                        await asyncio.sleep(0.02)  # (a poll of a condition)

                await guard(arrived())
                gc.collect()
                held = tracemalloc.get_traced_memory()[0]
            finally:
                tracemalloc.stop()
            return held / N, link.state_sizes()
        finally:
            client.stdin.close()
            await client.wait()
            impl.running["k"].set()


async def test_a_queued_call_costs_the_server_a_few_hundred_bytes(certs: DevCerts) -> None:
    """10 000 calls queued behind a held one: ~2.35 KB each before (every one made its reply channel), ~0.5 KB
    now (1024 made theirs, the rest wait as frames of ~36 bytes, parsed: ~290 bytes each)."""
    per_call, sizes = await bytes_per_queued_call(certs)
    assert per_call < 700, f"{per_call:.0f} bytes per queued call"
    assert sizes["queued_halves"] == EngineConfig().max_receiver_queue_halves and sizes["stalled_streams"] == 1

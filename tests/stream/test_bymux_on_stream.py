"""bymux runs over a Marlin Stream connection: the same echo application as over TCP and Aqueduct."""

from __future__ import annotations

import asyncio

from aeron_compat.bymux import read_exactly
from aeron_compat.bymux.on_stream import accept_on_stream, open_on_stream
from aeron_compat.marlin.aio import StreamEndpoint
from tests.bymux.bymux_app import run_echo_app


async def test_echo_app_over_a_stream_connection() -> None:
    server = await StreamEndpoint.listen("127.0.0.1", 0)
    client = await StreamEndpoint.bind()
    conn = await client.dial(server.address)
    sconn = await server.accept()
    bclient, bserver = await asyncio.gather(open_on_stream(conn), accept_on_stream(sconn))
    await asyncio.wait_for(run_echo_app(bclient, bserver), 120)
    await bclient.close()
    await bserver.close()
    client.close()
    server.close()


async def test_bymux_credit_bounds_memory_over_a_stream_connection() -> None:
    window = 64 * 1024
    server = await StreamEndpoint.listen("127.0.0.1", 0)
    client = await StreamEndpoint.bind()
    conn = await client.dial(server.address)
    sconn = await server.accept()
    bclient, bserver = await asyncio.gather(open_on_stream(conn, window=window), accept_on_stream(sconn, window=window))
    stream = await bclient.open_stream()
    peer = await bserver.accept_stream()
    writing = asyncio.create_task(stream.write(b"x" * (1 << 20)))  # 16x the window: done only as the reader reads
    got = 0
    while got < 1 << 20:
        chunk = await read_exactly(peer, 4096)
        got += len(chunk)
        assert bserver.buffered_bytes <= window + 64 * 1024
    await writing
    await bclient.close()
    await bserver.close()
    client.close()
    server.close()

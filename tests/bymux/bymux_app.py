"""One application, written against the transport-neutral stream API only.

`run_echo_app(client, server)` must pass unchanged over TCP-bymux and over
bymux-on-Aqueduct: concurrent streams carrying more than one credit window
each, ping, close (EOF), and stop_read ending the peer's writes.
"""

from __future__ import annotations

import asyncio

import pytest

from aeron_compat.bymux import ByteStream, StreamConnection, StreamStopped, read_exactly


async def _echo(stream: ByteStream) -> None:
    while chunk := await stream.read():
        await stream.write(chunk)
    await stream.close()


async def _serve(server: StreamConnection, count: int) -> None:
    async with asyncio.TaskGroup() as group:
        for _ in range(count):
            group.create_task(_echo(await server.accept_stream()))


async def _round_trip(client: StreamConnection, size: int) -> None:
    stream = await client.open_stream()
    payload = bytes(i * 7 % 251 for i in range(size))

    async def send() -> None:
        for i in range(0, size, 10_000):
            await stream.write(payload[i : i + 10_000])
        await stream.close()

    sender = asyncio.create_task(send())
    back = bytearray()
    while chunk := await stream.read():
        back += chunk
    await sender
    assert bytes(back) == payload


async def run_echo_app(client: StreamConnection, server: StreamConnection) -> None:
    """Echo three concurrent streams of different sizes, then check ping and stop_read."""
    assert isinstance(client, StreamConnection) and isinstance(server, StreamConnection)
    sizes = [1, 100_000, 700_000]
    serving = asyncio.create_task(_serve(server, len(sizes)))
    await asyncio.gather(*(_round_trip(client, size) for size in sizes))
    await serving

    # Ping on an open stream, then stop_read ends the other side's writes.
    stream = await client.open_stream()
    peer = await server.accept_stream()
    assert isinstance(stream, ByteStream) and isinstance(peer, ByteStream)
    assert await stream.ping() >= 0.0
    await peer.write(b"hello")
    assert await read_exactly(stream, 5) == b"hello"
    await stream.stop_read()
    with pytest.raises(StreamStopped):
        for _ in range(10_000):
            await peer.write(b"x" * 1000)
    # The client's own direction still works until it closes it.
    await stream.write(b"bye")
    await stream.close()
    assert await read_exactly(peer, 3) == b"bye"
    assert await peer.read() == b""

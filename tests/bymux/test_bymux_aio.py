"""bymux over asyncio TCP loopback and a Unix socket: the shared app, credit-bounded memory, gating, breach, loss."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from bymux_app import run_echo_app

from aeron_compat.bymux import Connection, ConnectionLost, ConnectionTerminated, Rule, open_connection


@contextlib.asynccontextmanager
async def tcp_connections(**kwargs: int) -> AsyncIterator[tuple[Connection, Connection]]:
    """A client (initiator) and a server connection over loopback TCP, both closed (and the server) on exit."""
    accepted: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(await open_connection(reader, writer, initiator=False, **kwargs))

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    client = await open_connection(reader, writer, initiator=True, **kwargs)
    server_conn = await accepted
    try:
        yield client, server_conn
    finally:
        await client.close()
        await server_conn.close()
        server.close()
        await server.wait_closed()


@pytest.fixture
async def tcp() -> AsyncIterator[tuple[Connection, Connection]]:
    async with tcp_connections() as pair:
        yield pair


async def test_echo_app_over_tcp(tcp: tuple[Connection, Connection]) -> None:
    await run_echo_app(*tcp)


async def test_echo_app_over_a_unix_socket(tmp_path: Path) -> None:
    accepted: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(await open_connection(reader, writer, initiator=False))

    path = str(tmp_path / "bymux.sock")
    server = await asyncio.start_unix_server(on_client, path)
    reader, writer = await asyncio.open_unix_connection(path)
    client = await open_connection(reader, writer, initiator=True)
    peer = await accepted
    await run_echo_app(client, peer)
    await client.close()
    await peer.close()
    server.close()
    await server.wait_closed()


async def test_100_mib_slow_reader_memory_bounded_by_credit_and_ping_not_starved() -> None:
    window = 256 * 1024
    total = 100 << 20
    block = bytes(range(256)) * 256  # 64 KiB
    async with tcp_connections(window=window) as (client, server_conn):
        bulk = await client.open_stream()
        quiet = await client.open_stream()
        bulk_in = await server_conn.accept_stream()
        quiet_in = await server_conn.accept_stream()

        async def send() -> None:
            for _ in range(total // len(block)):
                await bulk.write(block)
            await bulk.close()

        async def slow_read() -> tuple[int, int]:
            got = reads = stalls = 0
            while chunk := await bulk_in.read(64 * 1024):
                got += len(chunk)
                reads += 1
                if reads % 128 == 0 and total - got > window:
                    # A stall: stop reading until the sender has filled most of the credit window
                    # (Appendix B guarantees more than half of it can arrive). Pings mark progress.
                    stalls += 1
                    while bulk_in.buffered <= window // 2:
                        await quiet_in.ping()
            return got, stalls

        async def ping_while(task: asyncio.Task[tuple[int, int]]) -> int:
            answered = 0
            while not task.done():
                await quiet.ping()
                answered += 1
            return answered

        sender = asyncio.create_task(send())
        reader = asyncio.create_task(slow_read())
        pongs = await ping_while(reader)
        await sender
        got, stalls = await reader
        assert got == total
        assert stalls >= 10
        assert pongs >= 1  # pings on a second stream were answered during the bulk transfer
        # The receiving side never held more than the credit window (plus a partial packet head);
        # the sending side never more than its queue limit plus one batch in the transport.
        assert window // 2 < server_conn.max_buffered <= window + 64
        assert client.max_buffered <= client.queue_limit + client.batch + 64 * 1024 + 1024


async def test_global_credit_gates_stream_creation() -> None:
    async with tcp_connections(max_streams=2) as (client, server_conn):
        first = await client.open_stream()
        second = await client.open_stream()
        third = asyncio.create_task(client.open_stream())
        peer_first = await server_conn.accept_stream()
        await server_conn.accept_stream()
        await second.ping()  # everything before the ping has been processed by both sides
        assert not third.done()
        await first.close()
        assert await peer_first.read() == b""
        await peer_first.close()
        opened = await third  # the ended stream returned one global credit
        assert opened.stream_id == first.stream_id  # and its id is reused


async def test_peer_breach_terminates_with_rule() -> None:
    accepted: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(await open_connection(reader, writer, initiator=False))

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    conn = await accepted
    writer.write(bytes.fromhex("30 00"))  # creating stream 0 is legal: the server gave 64 global credit
    writer.write(bytes.fromhex("20 00 01 78"))  # writing before the server granted any credit is not
    with pytest.raises(ConnectionTerminated) as info:
        stream = await conn.accept_stream()
        await stream.read()
    assert info.value.rule is Rule.WRITE_BEYOND_CREDIT
    sent = await reader.read()  # the server closed the transport at once
    assert sent.startswith(b"\x10\x40")  # after its opening global credit of 64
    writer.close()
    server.close()
    await server.wait_closed()


async def test_transport_end_fails_pending_reads(tcp: tuple[Connection, Connection]) -> None:
    client, server_conn = tcp
    stream = await client.open_stream()
    await server_conn.accept_stream()
    pending = asyncio.create_task(stream.read())
    await server_conn.close()
    with pytest.raises(ConnectionLost):
        await pending
    with pytest.raises(ConnectionLost):
        await client.open_stream()

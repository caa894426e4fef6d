"""bymux streams on Aqueduct channels (in-process and over QUIC): the TCP application test, credit, breaches."""

from __future__ import annotations

import asyncio

import pytest
from bymux_app import run_echo_app

from aeron_compat.bymux import ConnectionTerminated, Rule, read_exactly
from aeron_compat.bymux.on_aqueduct import ChannelConnection, accept_on_aqueduct, local_pair, open_on_aqueduct
from aqueduct.api import Sender, channel, connect, serve
from aqueduct.quic.certs import DevCerts, make_dev_certs


async def test_echo_app_over_local_aqueduct_channels() -> None:
    client, server = await local_pair()
    await run_echo_app(client, server)
    await client.close()
    await server.close()


async def test_memory_bounded_by_credit_with_slow_reader() -> None:
    window = 64 * 1024
    client, server = await local_pair(window=window)
    stream = await client.open_stream()
    peer = await server.accept_stream()
    total = 4 << 20

    async def send() -> None:
        for _ in range(total // 8192):
            await stream.write(bytes(8192))
        await stream.close()

    sender = asyncio.create_task(send())
    got = 0
    reads = 0
    while chunk := await peer.read(4096):
        got += len(chunk)
        reads += 1
        if reads % 64 == 0 and total - got > window:  # a stall until the sender filled over half the window
            while peer.buffered <= window // 2:
                await stream.ping()
    await sender
    assert got == total
    assert window // 2 < server.max_buffered <= window
    await client.close()
    await server.close()


async def test_write_beyond_credit_terminates() -> None:
    client, server = await local_pair(window=10)
    stream = await client.open_stream()
    peer = await server.accept_stream()
    await peer.write(b"0123456789")
    assert await read_exactly(stream, 10) == b"0123456789"
    # Bypass the credit check the way a broken peer would.
    await peer._out_data.send(b"x" * 11)
    with pytest.raises(ConnectionTerminated) as info:
        await stream.read()
    assert info.value.rule is Rule.WRITE_BEYOND_CREDIT


async def test_stream_creation_needs_global_credit() -> None:
    client, server = await local_pair(max_streams=1)
    first = await client.open_stream()
    peer = await server.accept_stream()
    second = asyncio.create_task(client.open_stream())
    await first.ping()
    assert not second.done()
    await first.close()
    await peer.close()
    assert await first.read() == b""
    assert await peer.read() == b""
    assert (await second).stream_id == 2
    await client.close()
    await server.close()


async def _raw_peer() -> tuple[ChannelConnection, Sender]:
    """A responder whose peer is driven by hand through the raw control channel."""
    raw_tx, rx = channel()
    tx, _raw_rx = channel()
    conn = await ChannelConnection(tx, rx, initiator=False)._start()
    return conn, raw_tx


@pytest.mark.parametrize(
    ("message", "rule"),
    [
        (["bogus"], Rule.UNDEFINED_PACKET_TYPE),
        (["open", 1, None, None, None, None], Rule.CREATE_WRONG_PARITY),
        (["open", 0, None, None, None, None], Rule.UNDEFINED_PACKET_TYPE),
    ],
)
async def test_bad_control_messages_terminate(message: list[object], rule: Rule) -> None:
    conn, raw_tx = await _raw_peer()
    await raw_tx.send(message)
    with pytest.raises(ConnectionTerminated) as info:
        await conn.accept_stream()
    assert info.value.rule is rule


async def test_open_without_global_credit_terminates() -> None:
    conn, raw_tx = await _raw_peer()
    conn._recv_credit = 0  # as if the peer had used every stream we allowed
    await raw_tx.send(["open", 0, None, None, None, None])
    with pytest.raises(ConnectionTerminated) as info:
        await conn.accept_stream()
    assert info.value.rule is Rule.CREATE_WITHOUT_GLOBAL_CREDIT


@pytest.fixture(scope="module")
def dev_certs(tmp_path_factory: pytest.TempPathFactory) -> DevCerts:
    return make_dev_certs(tmp_path_factory.mktemp("bymux-certs"))


async def test_echo_app_over_aqueduct_on_quic(dev_certs: DevCerts) -> None:
    async with serve("127.0.0.1", 0, cert=dev_certs.cert, key=dev_certs.key) as server:
        port = server.address[1]
        async with connect(f"aqueduct://127.0.0.1:{port}", ca=dev_certs.ca) as aq_client:
            client = await open_on_aqueduct(aq_client.entrypoint)
            aq_server = await server.accept()
            peer = await accept_on_aqueduct(aq_server.entrypoint)
            await run_echo_app(client, peer)
            await client.close()
            await peer.close()

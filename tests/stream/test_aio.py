"""The asyncio Stream endpoint on real loopback UDP: connections, reader/writer streams, failures."""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from aeron_compat.marlin.aio import StreamEndpoint
from aeron_compat.marlin.errors import StreamReset
from aeron_compat.marlin.limits import MS, StreamConfig
from tests.stream.helpers import payload


async def _echo_server(server: StreamEndpoint) -> None:
    conn = await server.accept()
    while True:
        reader, writer = await conn.accept_stream()
        data = await reader.read()
        writer.write(hashlib.sha256(data).digest())
        writer.write_eof()
        await writer.drain()


def test_dial_send_and_receive_many_streams_over_loopback() -> None:
    async def main() -> None:
        server = await StreamEndpoint.listen("127.0.0.1", 0)
        client = await StreamEndpoint.bind()
        task = asyncio.ensure_future(_echo_server(server))
        conn = await client.dial(server.address)
        bodies = [payload(300_000, i) for i in range(4)]

        async def one(body: bytes) -> bytes:
            reader, writer = conn.open_stream()
            writer.write(body)
            writer.write_eof()
            await writer.drain()
            return await reader.read()

        digests = await asyncio.wait_for(asyncio.gather(*(one(b) for b in bodies)), 60)
        assert digests == [hashlib.sha256(b).digest() for b in bodies]
        task.cancel()
        client.close()
        server.close()

    asyncio.run(main())


def test_dialing_a_port_with_nobody_listening_fails_with_a_typed_error() -> None:
    async def main() -> None:
        silent = await StreamEndpoint.bind()  # bound, not listening: answers DIAL with RST
        client = await StreamEndpoint.bind(config=StreamConfig(handshake_retry_ns=20 * MS))
        with pytest.raises(StreamReset):
            await asyncio.wait_for(client.dial(silent.address), 30)
        client.close()
        silent.close()

    asyncio.run(main())


def test_reset_by_the_peer_fails_pending_reads() -> None:
    async def main() -> None:
        server = await StreamEndpoint.listen("127.0.0.1", 0)
        client = await StreamEndpoint.bind()
        conn = await client.dial(server.address)
        sconn = await server.accept()
        reader, writer = conn.open_stream()
        writer.write(b"hello")
        await writer.drain()
        sreader, _ = await sconn.accept_stream()
        assert await sreader.readexactly(5) == b"hello"
        sconn.close()
        with pytest.raises(StreamReset):
            await asyncio.wait_for(reader.read(), 30)
        client.close()
        server.close()

    asyncio.run(main())


def test_cli_listen_and_send_check_the_digest(tmp_path: object) -> None:
    import json
    import subprocess
    import sys

    listener = subprocess.Popen([sys.executable, "-m", "aeron_compat", "stream", "listen", "127.0.0.1:0",
                                 "--count", "1"], stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout is not None
        port = json.loads(listener.stdout.readline())["listening"][1]
        sent = subprocess.run([sys.executable, "-m", "aeron_compat", "stream", "send", f"127.0.0.1:{port}",
                               "--bytes", "500000"], capture_output=True, text=True, timeout=120, check=True)
        assert json.loads(sent.stdout)["checksum_ok"] is True
        served = json.loads(listener.stdout.readline())
        assert served["bytes"] == 500_000
    finally:
        listener.kill()
        listener.wait()


def test_cli_bench_prints_both_rates() -> None:
    from aeron_compat.marlin.cli import bench

    rates = asyncio.run(bench(1_000_000, 2000))
    assert rates["bulk_MBps"] > 0 and rates["msgs_per_s"] > 0


def test_openweaver_profile_between_two_python_endpoints() -> None:
    from aeron_compat.marlin.openweaver import OpenWeaverKeys

    async def main() -> None:
        keys = OpenWeaverKeys()
        server = await StreamEndpoint.listen("127.0.0.1", 0, profile="openweaver", keys=keys)
        client = await StreamEndpoint.bind(profile="openweaver")
        task = asyncio.ensure_future(_echo_server(server))
        conn = await client.dial(server.address, keys.static_public)
        reader, writer = conn.open_stream()
        writer.write(b"ow" * 50_000)
        writer.write_eof()
        assert await asyncio.wait_for(reader.read(), 60) == hashlib.sha256(b"ow" * 50_000).digest()
        task.cancel()
        client.close()
        server.close()

    asyncio.run(main())


def test_openweaver_dial_sealed_to_another_key_is_refused() -> None:
    from aeron_compat.marlin.openweaver import OpenWeaverKeys

    async def main() -> None:
        server = await StreamEndpoint.listen("127.0.0.1", 0, profile="openweaver", keys=OpenWeaverKeys())
        client = await StreamEndpoint.bind(profile="openweaver",
                                           config=StreamConfig(handshake_retry_ns=10 * MS, handshake_tries=3))
        with pytest.raises(StreamReset):
            await asyncio.wait_for(client.dial(server.address, OpenWeaverKeys().static_public), 30)
        assert server.engine.counters["refused"] >= 1 and not server.engine.connections
        client.close()
        server.close()

    asyncio.run(main())


def test_readexactly_beyond_the_readers_pause_limit_completes() -> None:
    """(It deadlocked: resuming the reader fed it before its waiter existed, then it paused again.)"""
    from aeron_compat.marlin.aio import READER_LIMIT

    async def main() -> None:
        server = await StreamEndpoint.listen("127.0.0.1", 0)
        client = await StreamEndpoint.bind()
        conn = await client.dial(server.address)
        body = payload(3 * READER_LIMIT, 7)
        _, writer = conn.open_stream()
        writer.write(body)
        writer.write_eof()
        peer = await server.accept()
        reader, _ = await peer.accept_stream()
        got = await asyncio.wait_for(reader.readexactly(len(body)), 30)
        assert got == body
        client.close()
        server.close()

    asyncio.run(main())

"""Interop with OpenWeaver (Marlin's C++ Stream), both directions, 10 MB checked by SHA-256.

Our endpoint dials its example server: the server (a patched copy of the upstream example,
third_party/openweaver/patches) prints the SHA-256 of the first OW_BYTES bytes it received; it must equal
ours. Its example client dials our listener and sends OW_BYTES bytes of a known pattern; we hash what we
read, and it prints `SENT n` once we acknowledged them. The build is cached by source hash, so only a
fresh machine pays for it (about 15 s plus the apt packages).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from nacl.public import PrivateKey

from aeron_compat.marlin.aio import StreamEndpoint
from aeron_compat.marlin.errors import StreamTimeout
from aeron_compat.marlin.limits import MS, StreamConfig
from aeron_compat.marlin.openweaver import OpenWeaverKeys
from tests.stream.openweaver_peer import build, free_udp_port, key_dir

SIZE = 10_000_000


def pattern(n: int) -> bytes:
    period = bytes((7 * i + 3) & 0xFF for i in range(256))
    return period * (n // 256) + period[: n % 256]


def test_we_dial_the_cpp_server_and_it_receives_10_mb_intact(tmp_path: Path) -> None:
    binaries = build()
    secret = PrivateKey.generate()
    port = free_udp_port()
    env = dict(os.environ, OW_LISTEN=f"127.0.0.1:{port}", OW_BYTES=str(SIZE))
    server = subprocess.Popen([str(binaries / "ow_server")], cwd=key_dir(tmp_path, bytes(secret)), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    data = pattern(SIZE)

    def received_line() -> str:
        assert server.stdout is not None
        for line in server.stdout:
            if line.startswith("RECEIVED"):
                return line.strip()
        return ""

    async def main() -> str:
        ep = await StreamEndpoint.bind(profile="openweaver")
        try:
            reading = asyncio.get_running_loop().run_in_executor(None, received_line)
            conn = await asyncio.wait_for(ep.dial(("127.0.0.1", port), bytes(secret.public_key)), 30)
            _, writer = conn.open_stream()
            writer.write(data)
            writer.write_eof()
            await writer.drain()
            line = await asyncio.wait_for(reading, 120)
            await asyncio.wait_for(writer.flushed(), 60)  # and the C++ side acknowledged every packet
            assert conn.engine.all_sent() and not conn.closed.is_set()  # by its ACKs, not by an idle timeout
            return line
        finally:
            ep.close()

    try:
        line = asyncio.run(main())
    finally:
        server.kill()
        server.wait()
    assert line == f"RECEIVED {SIZE} {hashlib.sha256(data).hexdigest()}"


def test_flushed_raises_when_the_cpp_server_dies_with_bytes_unacknowledged(tmp_path: Path) -> None:
    binaries = build()
    secret = PrivateKey.generate()
    port = free_udp_port()
    env = dict(os.environ, OW_LISTEN=f"127.0.0.1:{port}", OW_BYTES=str(SIZE))
    server = subprocess.Popen([str(binaries / "ow_server")], cwd=key_dir(tmp_path, bytes(secret)), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    async def main() -> None:
        ep = await StreamEndpoint.bind(profile="openweaver", config=StreamConfig(idle_timeout_ns=2_000 * MS))
        try:
            conn = await asyncio.wait_for(ep.dial(("127.0.0.1", port), bytes(secret.public_key)), 30)
            _, writer = conn.open_stream()
            writer.write(pattern(SIZE))
            server.kill()  # no RST: our side learns of it only by the idle timeout
            with pytest.raises(StreamTimeout):
                await asyncio.wait_for(writer.flushed(), 60)
            assert not conn.engine.all_sent()
        finally:
            ep.close()

    try:
        asyncio.run(main())
    finally:
        server.kill()
        server.wait()


def test_the_cpp_client_dials_us_and_we_receive_10_mb_intact(tmp_path: Path) -> None:
    """(The example client seals its DIAL to its own static key: the examples share ./.marlin/keys/static,
    so our listener holds the same key. Unpatched, its DIAL carried a wrong static key: decision MARLIN-29.)"""
    binaries = build()
    secret = PrivateKey.generate()
    data = pattern(SIZE)

    async def main() -> tuple[str, str]:
        ep = await StreamEndpoint.listen("127.0.0.1", 0, profile="openweaver", keys=OpenWeaverKeys(bytes(secret)))
        env = dict(os.environ, OW_DIAL=f"127.0.0.1:{ep.address[1]}", OW_BIND=f"127.0.0.1:{free_udp_port()}",
                   OW_BYTES=str(SIZE))
        client = await asyncio.create_subprocess_exec(str(binaries / "ow_client"), cwd=key_dir(tmp_path, bytes(secret)),
                                                      env=env, stdout=asyncio.subprocess.PIPE,
                                                      stderr=asyncio.subprocess.DEVNULL)
        try:
            conn = await asyncio.wait_for(ep.accept(), 30)
            reader, _ = await asyncio.wait_for(conn.accept_stream(), 30)
            got = await asyncio.wait_for(reader.readexactly(SIZE), 120)
            assert client.stdout is not None
            sent = ""
            while not sent.startswith("SENT"):
                line = await asyncio.wait_for(client.stdout.readline(), 60)
                assert line, "the C++ client ended before its data was acknowledged"
                sent = line.decode().strip()
            return hashlib.sha256(got).hexdigest(), sent
        finally:
            if client.returncode is None:
                client.kill()
            await client.wait()
            ep.close()

    digest, sent = asyncio.run(main())
    assert digest == hashlib.sha256(data).hexdigest()
    assert sent == f"SENT {SIZE}"

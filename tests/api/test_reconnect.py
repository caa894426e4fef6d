"""`aqueduct.reconnecting`: a client that survives its server going away, against a real server process.

The restart test kills and restarts `aqueduct serve --echo` three times (SIGTERM, SIGKILL, SIGTERM) on
one port; on every new connection the loop body re-opens its channels and gets its echo, and each old
channel ends with ConnectionLost (nothing is replayed). The rest pins the backoff and what is retried.
"""

from __future__ import annotations

import asyncio
import random
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import aqueduct
from aqueduct import RawCodec, RawMessage
from aqueduct.api.reconnect import Attempt, Backoff, reconnecting
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.settings import TransportSettings

from .conftest import guard

CLI = [sys.executable, "-m", "aqueduct"]


def test_backoff_without_jitter_doubles_up_to_max() -> None:
    delays = Backoff(initial=0.1, max=1.0, jitter=False).delays()
    assert [round(next(delays), 6) for _ in range(7)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0]


@given(st.floats(0.001, 5), st.floats(1, 4), st.integers(0, 2**32))
def test_backoff_jitter_stays_within_the_plain_delay(initial: float, multiplier: float, seed: int) -> None:
    plain = Backoff(initial=initial, max=10 * initial, multiplier=multiplier, jitter=False).delays()
    jittered = Backoff(initial=initial, max=10 * initial, multiplier=multiplier).delays(random.Random(seed))
    for _ in range(20):
        assert 0 <= next(jittered) <= next(plain)


def test_backoff_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="initial <= max"):
        Backoff(initial=2.0, max=1.0)


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_gives_up_after_max_attempts_reporting_each(certs: DevCerts) -> None:
    attempts: list[Attempt] = []
    conns = reconnecting(f"aqueduct://127.0.0.1:{_free_udp_port()}", ca=certs.ca, max_attempts=3,
                         backoff=Backoff(initial=0.01, max=0.02), on_attempt=attempts.append)
    with pytest.raises(aqueduct.ConnectError, match="nothing is listening"):
        await guard(conns.__anext__())
    assert [a.number for a in attempts] == [1, 2, 3]
    assert all(a.error is not None for a in attempts)
    assert [a.retry_in is None for a in attempts] == [False, False, True]
    assert "giving up" in str(attempts[-1]) and "retrying in" in str(attempts[0])


async def test_config_errors_are_not_retried(tmp_path: Path) -> None:
    attempts: list[Attempt] = []
    conns = reconnecting("aqueduct://127.0.0.1:9", ca=tmp_path / "missing.pem", on_attempt=attempts.append)
    with pytest.raises(aqueduct.ConfigError):
        await guard(conns.__anext__())
    assert len(attempts) == 1


class EchoServer:
    """`aqueduct serve --echo` as a child process on a fixed port, restartable."""

    def __init__(self, certs: DevCerts, port: int) -> None:
        self.certs, self.port = certs, port
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *CLI, "serve", "--echo", "--host", "127.0.0.1", "--port", str(self.port),
            "--cert", str(self.certs.cert), "--key", str(self.certs.key), stdout=asyncio.subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        line = await guard(self.proc.stdout.readline())
        assert line.decode().strip() == f"listening on 127.0.0.1:{self.port}"

    async def stop(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)
        await guard(self.proc.wait())


@pytest.fixture
async def echo_server(certs: DevCerts) -> AsyncIterator[EchoServer]:
    server = EchoServer(certs, _free_udp_port())
    await server.start()
    try:
        yield server
    finally:
        if server.proc is not None and server.proc.returncode is None:
            await server.stop(signal.SIGKILL)


async def test_survives_three_server_restarts_reopening_its_channels(
    echo_server: EchoServer, certs: DevCerts
) -> None:
    # A short idle timeout lets the client notice a SIGKILLed server (which sends no close) quickly.
    settings = TransportSettings(idle_timeout=1.0, keepalive=0.25)
    attempts: list[Attempt] = []
    echoes: list[bytes] = []
    ends: list[type[BaseException]] = []
    restarts = [signal.SIGTERM, signal.SIGKILL, signal.SIGTERM]
    url = f"aqueduct://127.0.0.1:{echo_server.port}"
    async with reconnecting(url, ca=certs.ca, codec=RawCodec(), settings=settings, on_attempt=attempts.append,
                            backoff=Backoff(initial=0.05, max=0.2)) as conns:
        async for conn in conns:
            # the loop body is the application's "re-open my channels" step
            reply_tx, reply_rx = aqueduct.channel()
            await conn.entrypoint.send(RawMessage(b"hello %d" % len(echoes), [reply_tx]))
            echoes.append((await guard(reply_rx.recv())).data)
            held_tx, held_rx = aqueduct.channel()  # a channel the server keeps open (it serves held_rx)
            await conn.entrypoint.send(RawMessage(b"hold", [held_rx]))
            if not restarts:
                break
            await echo_server.stop(restarts.pop(0))
            await guard(conn.wait_closed())
            try:
                await guard(held_tx.send(b"after the loss"))
            except aqueduct.ConnectionLost as exc:
                ends.append(type(exc))
            await echo_server.start()
    assert echoes == [b"hello 0", b"hello 1", b"hello 2", b"hello 3"]
    assert conns.connections == 4 and conns.connection is None
    assert ends == [aqueduct.ConnectionLost] * 3  # every old channel ended; none was carried over
    connected = [a for a in attempts if a.error is None]
    assert len(connected) == 4 and all(a.retry_in is None for a in connected)

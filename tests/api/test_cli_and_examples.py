"""The CLI (`cert`, `serve --echo`, `demo`) and the examples, run as a user would."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import aqueduct
from aqueduct import Delivery, RawCodec, RawMessage
from aqueduct.quic.certs import DevCerts

from .conftest import guard

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "import sys; from aqueduct.cli import main; sys.exit(main())"]


def test_cert_command_writes_a_ca_and_leaf(tmp_path: Path) -> None:
    out = subprocess.run([*CLI, "cert", "--dir", str(tmp_path)], capture_output=True, text=True, check=True).stdout
    assert "fingerprint: sha256:" in out
    assert {p.name for p in tmp_path.iterdir()} >= {"ca.pem", "ca.key", "cert.pem", "key.pem"}


@pytest.fixture(params=[["--echo"], []], ids=["--echo", "default"])
def echo_server(certs: DevCerts, request: pytest.FixtureRequest) -> Iterator[str]:
    """`aqueduct serve --echo`, and `aqueduct serve` alone, which serves the echo service by default."""
    proc = subprocess.Popen(
        [*CLI, "serve", *request.param, "--host", "127.0.0.1", "--port", "0", "--cert", str(certs.cert),
         "--key", str(certs.key)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("listening on 127.0.0.1:")
        yield "aqueduct://" + first.removeprefix("listening on ")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_echo_service_follows_the_rule(echo_server: str, certs: DevCerts) -> None:
    async with aqueduct.connect(echo_server, ca=certs.ca, codec=RawCodec()) as conn:
        a_tx, a_rx = aqueduct.channel()
        b_tx, b_rx = aqueduct.channel()
        await conn.entrypoint.send(RawMessage(b"ping", [a_tx, b_tx]))
        for rx in (a_rx, b_rx):  # every attached sender gets the payload, then a finish
            assert [m.data async for m in rx] == [b"ping"]

        d_tx, d_rx = aqueduct.channel()
        await conn.entrypoint.send(RawMessage(b"dgram", [d_tx]), mode="unreliable")
        echoed = await guard(d_rx.recv_message())
        assert echoed.value.data == b"dgram" and echoed.delivery is Delivery.UNRELIABLE

        # A receiver attached to a message is served by the same rule, recursively.
        inner_tx, inner_rx = aqueduct.channel()
        await conn.entrypoint.send(RawMessage(b"hold this", [inner_rx]))
        reply_tx, reply_rx = aqueduct.channel()
        await inner_tx.send(RawMessage(b"deeper", [reply_tx]))
        assert [m.data async for m in reply_rx] == [b"deeper"]


@pytest.mark.parametrize("name", ["echo_reply", "request_response", "pubsub", "chat", "typed_service"])
def test_example_runs(name: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, str(ROOT / "examples" / f"{name}.py")], capture_output=True,
                            text=True, timeout=60, env=env, cwd=ROOT / "examples")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    assert "Traceback" not in result.stderr, result.stderr


def test_typed_service_example_shows_each_rule() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "typed_service.py")], capture_output=True,
                         text=True, timeout=60, env=env, cwd=ROOT / "examples").stdout
    for line in ("quote: ACME 99.5/100.5", "tick: ACME #2 100.20", "client: not sent:", "at $.ticks",
                 "confirmed request: acked", "tape: 100, 250",
                 "desk: refused a message: at $.sym expected str, got int",
                 "untyped peer, still served: {'sym': 'ACME', 'bid': 99.5, 'ask': 100.5}"):
        assert line in out, out


def test_demo_runs() -> None:
    result = subprocess.run([*CLI, "demo"], capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr
    for marker in ("request/reply", "subscription", "telemetry", "cancel", "summary:", "RTT"):
        assert marker in result.stdout
    # the server meets misbehaving peers, each stopped by its own guard
    for marker in ("misbehaving peers:", "learned which were never processed (nacked)",
                   "closed with code 4 LIMIT_EXCEEDED (the peer made us exceed max_channels=64)",
                   "dropped before its handshake (max_connections_per_address=2)",
                   "a client with a wrong token was refused, code 9"):
        assert marker in result.stdout, result.stdout
    # the demo scrapes its server's Prometheus endpoint: every family counted something (failures included)
    line = next(x for x in result.stdout.splitlines() if "metrics scraped from http://127.0.0.1:" in x)
    zero = set(re.findall(r"zero: ([a-z_, ]+)\)", line)[0].split(", ")) if "zero:" in line else set()
    assert not zero, line

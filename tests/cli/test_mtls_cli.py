"""`aqueduct cert --client NAME` issues a client certificate from the dev CA; `aqueduct serve --client-ca FILE`
serves only clients holding one (checked against the live subprocess)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

import aqueduct
from aqueduct.api.codec import RawCodec

CLI = [sys.executable, "-m", "aqueduct"]


def test_client_cert_needs_the_dev_ca(tmp_path: Path) -> None:
    out = subprocess.run([*CLI, "cert", "--dir", str(tmp_path), "--client", "alice"], capture_output=True, text=True)
    assert out.returncode == 2 and "run `aqueduct cert` first" in out.stderr


def test_serve_refuses_an_unusable_client_ca(tmp_path: Path) -> None:
    subprocess.run([*CLI, "cert", "--dir", str(tmp_path)], check=True, capture_output=True)
    out = subprocess.run([*CLI, "serve", "--echo", "--port", "0", "--cert", str(tmp_path / "cert.pem"),
                          "--key", str(tmp_path / "key.pem"), "--client-ca", str(tmp_path / "nope.pem")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "nope.pem" in out.stderr


async def test_serve_with_client_ca_admits_only_certified_clients(tmp_path: Path) -> None:
    subprocess.run([*CLI, "cert", "--dir", str(tmp_path)], check=True, capture_output=True)
    issued = subprocess.run([*CLI, "cert", "--dir", str(tmp_path), "--client", "alice"], capture_output=True,
                            text=True, check=True)
    assert "alice.pem" in issued.stdout
    proc = await asyncio.create_subprocess_exec(
        *CLI, "serve", "--echo", "--port", "0", "--cert", str(tmp_path / "cert.pem"), "--key",
        str(tmp_path / "key.pem"), "--client-ca", str(tmp_path / "ca.pem"), stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        url = "aqueduct://" + line.split()[-1]
        ca = tmp_path / "ca.pem"
        with pytest.raises(aqueduct.AuthenticationFailed):
            await asyncio.wait_for(aqueduct.connect(url, ca=ca, codec=RawCodec()), 20)
        async with aqueduct.connect(url, ca=ca, codec=RawCodec(), cert=tmp_path / "alice.pem",
                                    key=tmp_path / "alice.key") as conn:
            await conn.entrypoint.send(b"ping")
        ended = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert "(CN=alice)" in ended
    finally:
        proc.terminate()
        await proc.wait()

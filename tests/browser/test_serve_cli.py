"""`aqueduct serve --webtransport`: the echo service reached from a WebTransport session, with the origin allow-list."""

from __future__ import annotations

import asyncio
import signal
import sys

import pytest

from aqueduct.api.codec import RawCodec
from aqueduct.cli import main
from aqueduct.quic.webtransport_cert import BrowserCert

from .wt_client import open_session, raw_session


async def test_serve_webtransport_echoes_to_a_session_from_an_allowed_origin(browser_cert: BrowserCert) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aqueduct", "serve", "--port", "0", "--cert", str(browser_cert.cert),
        "--key", str(browser_cert.key), "--webtransport", "--origin", "https://app.example",
        stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert line.startswith("listening on ")
        address = ("127.0.0.1", int(line.rsplit(":", 1)[1]))
        refused = await raw_session(address, browser_cert.hex, origin="https://other.example")
        assert refused.status.result() == 403
        refused.close_connection(0, "done")
        conn = await open_session(address, browser_cert.hex, origin="https://app.example",
                                  codec=RawCodec())
        await conn.entrypoint.send(b"hello")
        await conn.close()
        ended = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert "(WebTransport) ended: 1 entrypoint messages" in ended
    finally:
        proc.send_signal(signal.SIGTERM)
        await proc.wait()


def test_origin_without_webtransport_is_refused(browser_cert: BrowserCert, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["serve", "--port", "0", "--cert", str(browser_cert.cert), "--key", str(browser_cert.key),
            "--origin", "https://app.example"]
    assert main(argv) == 2
    assert "--origin and --webtransport-path need --webtransport" in capsys.readouterr().err

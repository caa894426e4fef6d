"""The server side of Aqueduct over WebTransport, driven by a Python WebTransport client (wt_client.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import aqueduct
from aqueduct.quic.webtransport_cert import BrowserCert

from .wt_client import open_session, raw_session

pytestmark = pytest.mark.asyncio


async def test_a_session_and_a_quic_client_reach_the_same_server(browser_cert: BrowserCert) -> None:
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key,
                              webtransport=True) as server:
        async def handle() -> list[tuple[str, Any]]:
            seen = []
            async for conn in server:
                msg = await conn.entrypoint.recv()
                seen.append((conn.transport, msg))
                if len(seen) == 2:
                    return seen
            return seen

        task = asyncio.create_task(handle())
        browser = await open_session(server.address, browser_cert.hex)
        await browser.entrypoint.send({"from": "webtransport"})
        quic = await aqueduct.connect(f"aqueduct://127.0.0.1:{server.address[1]}", fingerprint=browser_cert.hex)
        await quic.entrypoint.send({"from": "quic"})
        seen = await asyncio.wait_for(task, 10)
        assert sorted(seen) == [("quic", {"from": "quic"}), ("webtransport", {"from": "webtransport"})]
        await browser.close()
        await quic.close()

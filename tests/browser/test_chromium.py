"""Aqueduct in a real browser: headless Chromium (Debian's, setup-system.sh chromium) opens WebTransport sessions to
a server made with `serve(webtransport=True)` and a fresh ECDSA P-256 certificate valid 13 days, trusted by the page
through `serverCertificateHashes` alone: no browser flag weakens security (only --headless=new and --no-sandbox,
which the container needs).

The page (page/relay.html, served over HTTP on loopback) speaks nothing but the WebTransport API; the Aqueduct client
engine runs in the test and its bytes cross the page's session (relay.py), so every frame goes through Chromium's
QUIC, HTTP/3 and WebTransport stack to the server's adapter. Through it: a message carrying a new receiver gets a
stream back on it, a sender the server replies on, a typed service called (a result, a streaming result, a declared
error, a cancelled call that cancels the server task), and a channel the server creates reaches the page inside a
message, and unreliable channels both ways ride the session's datagrams. A hostile page gets a close code; a refused
page gets no session.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import async_playwright

import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.quic.webtransport_cert import BrowserCert
from aqueduct.services.context import configure
from aqueduct.services.interface import interface_of
from aqueduct.services.stub import make_stub
from tests.harness.http import quiet_files, serving
from tests.services.calc import Calc, Calculator, DivisionByZero

from .relay import BrowserRelay, open_in_browser

pytestmark = [pytest.mark.asyncio, pytest.mark.requires_system("chromium")]
PAGE_DIR = Path(__file__).parent / "page"
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-proxy-server"]



@pytest.fixture(scope="module")
def page_origin() -> Iterator[str]:
    """The test page's origin: page/ served over HTTP on loopback."""
    with serving(quiet_files(PAGE_DIR)) as origin:
        yield origin


@pytest.fixture
async def relay(chromium: str, page_origin: str) -> AsyncIterator[BrowserRelay]:
    """A loaded relay page in a fresh headless Chromium."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            problems: list[str] = []
            page.on("pageerror", lambda exc: problems.append(str(exc)))
            it = BrowserRelay(page)
            await it.expose()
            await page.goto(f"{page_origin}/relay.html")
            yield it
            assert problems == []
        finally:
            await browser.close()


def _url(server: aqueduct.Server[Any], path: str = "/aqueduct") -> str:
    return f"https://127.0.0.1:{server.address[1]}{path}"


async def test_channels_travel_both_ways_between_the_page_and_the_server(
    relay: BrowserRelay, browser_cert: BrowserCert, page_origin: str,
) -> None:
    options = aqueduct.WebTransportOptions(origins=(page_origin,))
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key,
                              webtransport=options) as server:
        async def handle() -> str:
            conn = await server.accept()
            async for msg in conn.entrypoint:
                if msg["op"] == "stream":  # a receiver from the page: a stream back on it
                    async with msg["to"] as tx:
                        for i in range(100):
                            await tx.send({"i": i, "pad": "x" * 64})
                elif msg["op"] == "reply":  # a sender from the page: the server replies on it
                    await msg["to"].send(msg["x"] + 1)
                    await msg["to"].finish()
                elif msg["op"] == "subscribe":  # the server creates a channel and hands the page its receiver
                    tx, rx = aqueduct.channel()
                    await msg["to"].send(rx)
                    async with tx:
                        for word in ("server", "made", "this"):
                            await tx.send(word)
                elif msg["op"] == "datagrams":  # unreliable channels both ways: session datagrams
                    assert await msg["from"].recv() == b"up"
                    await msg["ack"].send("up arrived")
                    down_tx, down_rx = aqueduct.channel(mode=aqueduct.Delivery.UNRELIABLE)
                    back_tx, back_rx = aqueduct.oneshot()
                    await msg["ack"].send({"down": down_rx, "ack": back_tx})
                    for _ in range(40):  # (a datagram may be lost: send until the page says one arrived)
                        await down_tx.send(b"down")
                        with contextlib.suppress(TimeoutError):
                            assert await back_rx.recv(timeout=0.5) == "down arrived"
                            break
            return conn.transport

        task = asyncio.create_task(handle())
        conn = await open_in_browser(relay, _url(server), browser_cert.hex)
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send({"op": "stream", "to": tx})
        got = [m async for m in rx]
        assert [m["i"] for m in got] == list(range(100))
        reply_tx, reply_rx = aqueduct.channel()
        await conn.entrypoint.send({"op": "reply", "to": reply_tx, "x": 41})
        assert await asyncio.wait_for(reply_rx.recv(), 10) == 42
        inbox_tx, inbox_rx = aqueduct.oneshot()
        await conn.entrypoint.send({"op": "subscribe", "to": inbox_tx})
        made = await asyncio.wait_for(inbox_rx.recv(), 10)
        assert [w async for w in made] == ["server", "made", "this"]
        up_tx, up_rx = aqueduct.channel(mode=aqueduct.Delivery.UNRELIABLE)
        ack_tx, ack_rx = aqueduct.channel()
        await conn.entrypoint.send({"op": "datagrams", "from": up_rx, "ack": ack_tx})
        for _ in range(40):  # (a datagram may be lost: send until the server says one arrived)
            await up_tx.send(b"up")
            with contextlib.suppress(TimeoutError):
                if await ack_rx.recv(timeout=0.5) == "up arrived":
                    break
        else:
            pytest.fail("no datagram from the page reached the server")
        down = await asyncio.wait_for(ack_rx.recv(), 10)
        assert await asyncio.wait_for(down["down"].recv(), 10) == b"down"
        await down["ack"].send("down arrived")
        assert conn.stats.unreliable_sent >= 1 and conn.stats.unreliable_received >= 1
        await conn.close()
        assert await asyncio.wait_for(task, 10) == "webtransport"
        assert server.webtransport is not None and server.webtransport.refused == 0


async def test_the_page_calls_a_typed_service(relay: BrowserRelay, browser_cert: BrowserCert) -> None:
    impl = Calc()
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key, service=impl,
                              webtransport=True) as server:
        iface = interface_of(Calculator)
        conn = await open_in_browser(relay, _url(server), browser_cert.hex, entrypoint=iface.call_type)
        configure(link_of(conn), (), 16)
        calc: Calculator = make_stub(iface, conn.entrypoint)
        assert await calc.add(2, 3) == 5  # a result
        assert [n async for n in await calc.count(5)] == [0, 1, 2, 3, 4]  # a streaming result
        with pytest.raises(DivisionByZero, match="1 / 0"):  # a declared error
            await calc.div(1, 0)
        call = asyncio.create_task(calc.wait("slow"))  # a call the page gives up: the server's task is cancelled
        assert await asyncio.wait_for(impl.started.get(), 10) == "slow"
        call.cancel()
        assert await asyncio.wait_for(impl.cancelled.get(), 10) == "slow"
        assert await calc.add(1, 1) == 2  # and the connection goes on
        await conn.close()


async def test_a_hostile_page_gets_the_close_code_a_quic_peer_gets(
    relay: BrowserRelay, browser_cert: BrowserCert,
) -> None:
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key,
                              webtransport=True) as server:
        code, reason = await relay._page.evaluate("([u, h, b]) => hostile(u, h, b)",
                                                  [_url(server), browser_cert.hex, b"\x00garbage".hex()])
        assert code in (aqueduct.CloseCode.PROTOCOL_VIOLATION, aqueduct.CloseCode.FRAME_ENCODING), reason
        assert server.webtransport is not None and server.webtransport.live == 0


@pytest.mark.parametrize("path", ["/elsewhere", "/aqueduct"], ids=["wrong-path", "wrong-origin"])
async def test_a_page_outside_the_allow_list_gets_no_session(
    relay: BrowserRelay, browser_cert: BrowserCert, path: str,
) -> None:
    options = aqueduct.WebTransportOptions(origins=("https://app.example",))
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key,
                              webtransport=options) as server:
        seen = await relay._page.evaluate("([u, h]) => refused(u, h)", [_url(server, path), browser_cert.hex])
        assert seen.startswith("WebTransportError")
        assert server.webtransport is not None and server.webtransport.refused == 1
        assert server.webtransport.live == 0

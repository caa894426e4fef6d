"""The TypeScript client (clients/typescript, its one-file bundle) in headless Chromium against a Python server over
WebTransport, with only `serverCertificateHashes` (a fresh ECDSA P-256 certificate valid 13 days) and no browser
flag that weakens security: the page sends a message carrying a new receiver's sender and gets a stream back on it,
sends a sender the server replies on, gets a channel the server made inside a message, and calls a service (a
result, a streaming result, a declared error, a cancelled call that cancels the server's task). A second page calls
the same service through the generated stub: page/stub.ts, typed by what `aqueduct schema` and `npm run
service-types` make of tests/services/calc.py's Calculator, type-checked with tsc (calls the types must reject
included) and bundled with esbuild here.

The bundle is built here when it is missing or older than the client's sources (`npm run bundle`: esbuild from the
package's node_modules, installed offline from the cache scripts/setup-node.sh fills: tests/typescript/npm.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, async_playwright

import aqueduct
from aqueduct.quic.webtransport_cert import BrowserCert
from tests.harness.http import serving
from tests.services.calc import Calc
from tests.typescript.npm import installed, npm, tool

pytestmark = [pytest.mark.asyncio, pytest.mark.requires_system("chromium"), pytest.mark.requires_system("node")]
ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "typescript"
BUNDLE = PACKAGE / "bundle" / "aqueduct.js"
PAGE = Path(__file__).parent / "page" / "client.html"
STUB_PAGE = Path(__file__).parent / "page" / "stub.ts"
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-proxy-server"]


def _bundle() -> bytes:
    """The client's one-file bundle, built (under a lock: test workers share the folder) when missing or older than
    the client's sources."""
    package = installed()
    with open(package / ".bundle.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        newest = max(p.stat().st_mtime for p in (package / "src").rglob("*.ts"))
        if not BUNDLE.exists() or BUNDLE.stat().st_mtime < newest:
            out = npm("run", "--silent", "bundle")
            assert out.returncode == 0, f"npm run bundle failed:\n{out.stdout}\n{out.stderr}"
        return BUNDLE.read_bytes()


def _typed_stub_bundle(build: Path) -> bytes:
    """page/stub.ts with the types `aqueduct schema` and `npm run service-types` make of tests/services/calc.py's
    Calculator, type-checked by tsc and bundled (the client included) by esbuild, in `build`."""
    package = installed()
    schema = subprocess.run([sys.executable, "-m", "aqueduct", "schema", "tests.services.calc:Calculator"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert schema.returncode == 0, schema.stderr
    types = subprocess.run(["node", "scripts/service-types.mjs", "Calculator"], cwd=package, input=schema.stdout,
                           capture_output=True, text=True, timeout=120)
    assert types.returncode == 0, types.stderr
    (build / "calculator.ts").write_text(types.stdout)
    (build / "stub.ts").write_text(STUB_PAGE.read_text())
    (build / "tsconfig.json").write_text(json.dumps({
        "compilerOptions": {"target": "ES2022", "module": "ESNext", "moduleResolution": "Bundler",
                            "lib": ["ES2022", "DOM", "DOM.Iterable"], "strict": True, "noEmit": True,
                            "skipLibCheck": True, "types": [],
                            "paths": {"@aqueduct-quic/client": [str(package / "src" / "index.ts")]}},
        "files": ["stub.ts"],
    }))
    checked = tool("tsc", "-p", str(build / "tsconfig.json"), cwd=build)
    assert checked.returncode == 0, f"tsc rejected the typed page:\n{checked.stdout}{checked.stderr}"
    out = build / "stub.js"
    bundled = tool("esbuild", "stub.ts", "--bundle", "--format=esm", "--target=es2022", "--tsconfig=tsconfig.json",
                   f"--outfile={out}", "--log-level=warning", cwd=build, timeout=120)
    assert bundled.returncode == 0, bundled.stdout + bundled.stderr
    return out.read_bytes()


@contextlib.contextmanager
def _serving(files: dict[str, tuple[bytes, str]]) -> Iterator[str]:
    """`files` (path -> body, content type) served over HTTP on loopback; yields the origin."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = files.get(self.path)
            if found is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", found[1])
            self.send_header("Content-Length", str(len(found[0])))
            self.end_headers()
            self.wfile.write(found[0])

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serving(Handler) as origin:
        yield origin


@contextlib.asynccontextmanager
async def _opened(chromium: str, url: str) -> AsyncIterator[Page]:
    """A headless Chromium page at `url`, once it set `window.ready`; fails on any uncaught page error."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            it = await browser.new_page()
            problems: list[str] = []
            it.on("pageerror", lambda exc: problems.append(str(exc)))
            await it.goto(url)
            await it.wait_for_function("window.ready === true")
            yield it
            assert problems == []
        finally:
            await browser.close()


@pytest.fixture(scope="module")
def page_origin() -> Iterator[str]:
    """client.html and the bundle (as /aqueduct.js), served over HTTP on loopback."""
    with _serving({"/client.html": (PAGE.read_bytes(), "text/html"),
                   "/aqueduct.js": (_bundle(), "text/javascript")}) as origin:
        yield origin


@pytest.fixture
async def page(chromium: str, page_origin: str) -> AsyncIterator[Page]:
    async with _opened(chromium, f"{page_origin}/client.html") as it:
        yield it


@pytest.fixture
async def stub_page(chromium: str, tmp_path: Path) -> AsyncIterator[Page]:
    """A page running page/stub.ts, typed by the generated stub types and bundled."""
    html = b'<!doctype html><meta charset="utf-8"><title>stub</title><script type="module" src="/stub.js"></script>'
    with _serving({"/stub.html": (html, "text/html"),
                   "/stub.js": (_typed_stub_bundle(tmp_path), "text/javascript")}) as origin:
        async with _opened(chromium, f"{origin}/stub.html") as it:
            yield it


async def test_channels_travel_both_ways_with_the_typescript_client(
    page: Page, browser_cert: BrowserCert, page_origin: str,
) -> None:
    options = aqueduct.WebTransportOptions(origins=(page_origin,))
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key,
                              webtransport=options) as server:
        async def handle() -> str:
            conn = await server.accept()
            await serve_page(conn)  # the page's graceful close finishes its entrypoint: the loop ends cleanly
            return conn.transport

        async def serve_page(conn: aqueduct.Connection[Any]) -> None:
            async for msg in conn.entrypoint:
                if msg["op"] == "stream":
                    async with msg["to"] as tx:
                        for i in range(100):
                            await tx.send({"i": i})
                elif msg["op"] == "reply":
                    await msg["to"].send(msg["x"] + 1)
                    await msg["to"].finish()
                elif msg["op"] == "subscribe":
                    tx, rx = aqueduct.channel()
                    await msg["to"].send(rx)
                    async with tx:
                        for word in ("server", "made", "this"):
                            await tx.send(word)

        task = asyncio.create_task(handle())
        url = f"https://127.0.0.1:{server.address[1]}/aqueduct"
        out = await asyncio.wait_for(page.evaluate("([u, h]) => channels(u, h)", [url, browser_cert.hex]), 60)
        assert out == {"stream": list(range(100)), "reply": 42, "made": ["server", "made", "this"]}
        assert await asyncio.wait_for(task, 10) == "webtransport"


async def test_the_typescript_client_calls_a_typed_service(page: Page, browser_cert: BrowserCert) -> None:
    impl = Calc()
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key, service=impl,
                              webtransport=True) as server:
        url = f"https://127.0.0.1:{server.address[1]}/aqueduct"
        out = await asyncio.wait_for(page.evaluate("([u, h]) => service(u, h)", [url, browser_cert.hex]), 60)
        assert out["add"] == 5 and out["count"] == [0, 1, 2, 3, 4] and out["after"] == 2
        assert out["div"] == {"type": "DivisionByZero", "message": "1 / 0", "method": "div"}
        assert await asyncio.wait_for(impl.started.get(), 10) == "slow"
        assert await asyncio.wait_for(impl.cancelled.get(), 10) == "slow"


async def test_the_generated_stub_calls_a_typed_service_in_chromium(stub_page: Page, browser_cert: BrowserCert) -> None:
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key, service=Calc(),
                              webtransport=True) as server:
        url = f"https://127.0.0.1:{server.address[1]}/aqueduct"
        out = await asyncio.wait_for(stub_page.evaluate("([u, h]) => typedService(u, h)", [url, browser_cert.hex]),
                                     60)
        assert out == {
            "add": 5,
            "count": [0, 1, 2, 3, 4],
            "div": {"declared": True, "message": "1 / 0"},
            "fail": {"type": "KeyError", "method": "fail"},
        }

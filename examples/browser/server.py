"""A live dashboard in the browser: a page hands the server a channel and draws what the server streams into it, and
a form calls a typed service; the page speaks Aqueduct over WebTransport with the TypeScript client.

Run (from the repository root, after `bash scripts/setup-node.sh` and `npm run build` in clients/typescript):

    .venv/bin/python examples/browser/server.py [--port 4433] [--http-port 8000]

then open the printed http://127.0.0.1:8000/ in Chrome or Edge (Firefox too). The server makes a fresh ECDSA P-256
certificate valid 13 days at each start (what a page's `serverCertificateHashes` accepts: no CA, no browser flag) and
gives the page its hash and port in /config.json. The Aqueduct server admits sessions only from the page's origin.

The service, `Dashboard`:
- `watch(feed)`: the page creates a channel, keeps its receiver and passes the Sender; the server sends a `Point` to
  it ten times a second until the page closes its receiver (or leaves);
- `quote(item, quantity)`: a typed result (`Quote`), or the declared error `OutOfStock`.
"""

from __future__ import annotations

import abc
import argparse
import asyncio
import json
import math
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgspec

import aqueduct
from aqueduct import Sender
from aqueduct.quic.webtransport_cert import make_browser_cert

HERE = Path(__file__).resolve().parent
BUNDLE = HERE.parents[1] / "clients" / "typescript" / "bundle" / "aqueduct.js"
PRICES = {"apples": 0.5, "pears": 0.75, "plums": 1.25}


class Point(msgspec.Struct):
    t: float
    value: float


class Quote(msgspec.Struct):
    item: str
    quantity: int
    total: float


class OutOfStock(Exception):
    """Declared by Dashboard: reaches the page as its own error, not a RemoteError."""


class Dashboard(aqueduct.Service, errors=[OutOfStock]):
    @abc.abstractmethod
    async def watch(self, feed: Sender[Point]) -> None: ...

    @abc.abstractmethod
    async def quote(self, item: str, quantity: int) -> Quote: ...


class Live(Dashboard):
    def __init__(self) -> None:
        self.feeds: set[asyncio.Task[None]] = set()

    async def watch(self, feed: Sender[Point]) -> None:
        task = asyncio.ensure_future(self._feed(feed))
        self.feeds.add(task)
        task.add_done_callback(self.feeds.discard)

    async def _feed(self, feed: Sender[Point]) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        try:
            while True:
                t = loop.time() - start
                await feed.send(Point(t=round(t, 2), value=math.sin(t) + 0.3 * math.sin(3.1 * t)))
                await asyncio.sleep(0.1)  # (the feed's pace: a point every 100 ms)
        except aqueduct.ChannelError:
            pass  # the page closed its receiver or left

    async def quote(self, item: str, quantity: int) -> Quote:
        if item not in PRICES:
            raise OutOfStock(f"no {item} today")
        return Quote(item=item, quantity=quantity, total=round(PRICES[item] * quantity, 2))


def serve_page(port: int, config: dict[str, Any]) -> ThreadingHTTPServer:
    """index.html, app.js, the TypeScript client's bundle (/aqueduct.js) and /config.json, over HTTP."""
    if not BUNDLE.exists():
        raise SystemExit(f"{BUNDLE} is missing: run `npm run build` in clients/typescript")
    files = {"/": (HERE / "index.html", "text/html"), "/app.js": (HERE / "app.js", "text/javascript"),
             "/aqueduct.js": (BUNDLE, "text/javascript")}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/config.json":
                body, kind = json.dumps(config).encode(), "application/json"
            elif self.path in files:
                body, kind = files[self.path][0].read_bytes(), files[self.path][1]
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


async def main(port: int, http_port: int, ready: asyncio.Future[str] | None = None) -> None:
    """Serve until cancelled; `ready` gets the page's URL once both servers listen."""
    with tempfile.TemporaryDirectory() as tmp:
        cert = make_browser_cert(Path(tmp))
        config: dict[str, Any] = {"certificateHash": cert.hex}
        httpd = serve_page(http_port, config)
        page = f"http://127.0.0.1:{httpd.server_address[1]}"
        try:
            options = aqueduct.WebTransportOptions(origins=(page,))
            async with aqueduct.serve("127.0.0.1", port, cert=cert.cert, key=cert.key, service=Live(),
                                      webtransport=options) as server:
                config["url"] = f"https://127.0.0.1:{server.address[1]}/aqueduct"
                print(f"open {page}/ (Aqueduct over WebTransport at {config['url']})", flush=True)
                if ready is not None:
                    ready.set_result(page)
                await asyncio.Event().wait()
        finally:
            httpd.shutdown()
            httpd.server_close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The browser dashboard example's server")
    parser.add_argument("--port", type=int, default=4433, help="UDP port of the Aqueduct server")
    parser.add_argument("--http-port", type=int, default=8000, help="TCP port of the page")
    args = parser.parse_args()
    try:
        asyncio.run(main(args.port, args.http_port))
    except KeyboardInterrupt:
        pass

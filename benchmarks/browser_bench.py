"""Browser rows: 64 B messages a second and calls a second from headless Chromium over WebTransport, beside the
Python client over QUIC, into the same server.

    .venv/bin/python benchmarks/browser_bench.py [--messages 100000] [--calls 2000] [--rounds 3]

One `aqueduct.serve(webtransport=True)` server (the default CBOR codec, a certificate trusted by hash) runs in this
process and counts what reaches its entrypoint: each row's figure is the server's own count divided by the time
between the first and the last message it took (far-side counting: a row whose count is not exactly what was sent
fails). Every message is a 64-byte `bytes` value; a call is a message carrying it and a oneshot reply sender, which
the server answers with the same bytes.
- `python-quic`: a Python client process (`aqueduct.connect`) sends the messages on its entrypoint
  (`Sender.send`, which waits only on backpressure);
- `chromium-raw`: a page (headless Chromium, only `serverCertificateHashes`) opens a session and writes the same
  messages pre-encoded by a client engine here (the exact bytes a client sends: the control stream's Version +
  ConnectionControl, then the entrypoint's message stream), fetched over HTTP and written in 64 KiB writes: the
  transport's rate (Chromium's QUIC and WebTransport, the server's adapter and engine) without a client engine;
- `chromium-typescript`: the TypeScript client (clients/typescript's bundle; built with `npm run bundle`) in the
  page sends them (`await tx.send(bytes)` each);
- `... calls`: sequential request/reply round trips (Python `aqueduct.request`, TypeScript `request`).

Wall-clock figures on a shared machine are noise: compare rows of one run, and read `server CPU us/msg` (the
server process's CPU time per message over the row, time.process_time of this process, which runs only the server
and the page's driver) before the rates.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aqueduct
from aqueduct.api.codec import DEFAULT_CODEC
from aqueduct.core.config import EngineConfig
from aqueduct.core.engine import Engine
from aqueduct.core.transport import SendStreamData
from aqueduct.quic.webtransport_cert import make_browser_cert
from aqueduct.wire.channel_id import Side

PAYLOAD = bytes(range(64))
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-proxy-server"]
PAGE = """<!doctype html><meta charset="utf-8"><title>bench</title><script>
window.blast = async function (url, hashHex) {
  const hash = new Uint8Array(hashHex.match(/../g).map((x) => parseInt(x, 16)));
  const get = async (p) => new Uint8Array(await (await fetch(p)).arrayBuffer());
  const [ctl, msgs] = [await get('/ctl'), await get('/msgs')];
  const wt = new WebTransport(url, { serverCertificateHashes: [{ algorithm: 'sha-256', value: hash }] });
  await wt.ready;
  const control = await wt.createBidirectionalStream();
  const cw = control.writable.getWriter();
  await cw.write(ctl);
  const reply = control.readable.getReader();
  await reply.read();  // the server's ConnectionControl: the session is up
  const s = await wt.createUnidirectionalStream();
  const w = s.getWriter();
  for (let i = 0; i < msgs.length; i += 65536) await w.write(msgs.subarray(i, i + 65536));
  return msgs.length;
}
</script><script type="module">
import { connect, request } from "/aqueduct.js";
const open = (url, hashHex) => connect(url, { serverCertificateHashes: [{ algorithm: 'sha-256',
  value: new Uint8Array(hashHex.match(/../g).map((x) => parseInt(x, 16))) }] });
window.tsStream = async (url, hashHex, n) => {
  const conn = await open(url, hashHex);
  const payload = new Uint8Array(64).map((_, i) => i);
  for (let i = 0; i < n; i++) await conn.entrypoint.send(payload);
  return n;
};
window.tsCalls = async (url, hashHex, n) => {
  const conn = await open(url, hashHex);
  const payload = new Uint8Array(64);
  for (let i = 0; i < n; i++) await request(conn.entrypoint, (reply) => ({ reply, x: payload }));
  conn.close();
  return n;
};
</script>"""


@dataclass
class Row:
    """One measured row: what the server counted and how fast it took it."""

    name: str
    sent: int
    counted: int
    seconds: float
    cpu: float

    @property
    def rate(self) -> float:
        return self.counted / self.seconds if self.seconds > 0 else 0.0

    def line(self) -> str:
        return (f"{self.name:<28} {self.counted:>9} of {self.sent:<9} {self.rate:>12,.0f}/s "
                f"{self.cpu / max(self.counted, 1) * 1e6:>8.1f} server CPU us/msg")


class Counter:
    """What the server took on its connections' entrypoints: the count and the times of the first and last."""

    def __init__(self) -> None:
        self.count = 0
        self.first = 0.0
        self.last = 0.0
        self.cpu0 = 0.0
        self.cpu1 = 0.0
        self.done = asyncio.Event()
        self.expect = 0

    def reset(self, expect: int) -> None:
        self.count, self.first, self.last, self.expect = 0, 0.0, 0.0, expect
        self.done.clear()

    def took(self) -> None:
        now = time.perf_counter()
        if self.count == 0:
            self.first, self.cpu0 = now, time.process_time()
        self.count += 1
        self.last = now
        if self.count == self.expect:
            self.cpu1 = time.process_time()
            self.done.set()


async def _handle(conn: aqueduct.Connection[Any], counter: Counter) -> None:
    with contextlib.suppress(aqueduct.AqueductError):  # (the connection ends as the row's client leaves)
        async for msg in conn.entrypoint:
            counter.took()
            if isinstance(msg, dict):  # a call: {"reply": a oneshot sender, "x": the bytes}
                await msg["reply"].send(msg["x"])


def client_stream_bytes(n: int) -> tuple[bytes, bytes]:
    """The control stream's and the entrypoint message stream's bytes of a client sending n 64-byte messages."""
    engine = Engine(Side.CLIENT, headers=[("codec", DEFAULT_CODEC.name.encode())], config=EngineConfig(), now=0.0)
    ep = engine.entrypoint
    assert ep is not None
    payload, _ = DEFAULT_CODEC.encode(PAYLOAD)
    for start in range(0, n, 1024):
        engine.send_many(ep, [payload] * min(1024, n - start))  # type: ignore[arg-type]
    streams: dict[int, list[bytes]] = {}
    for cmd in engine.commands():
        if isinstance(cmd, SendStreamData):
            streams.setdefault(cmd.stream_id, []).append(cmd.data)
    assert sorted(streams) == [0, 2], sorted(streams)
    return b"".join(streams[0]), b"".join(streams[2])


PY_CLIENT = """
import asyncio, sys, aqueduct
async def main(port, fp, n, calls):
    async with aqueduct.connect(f"aqueduct://127.0.0.1:{port}", fingerprint=fp) as conn:
        payload = bytes(range(64))
        if calls:
            for _ in range(n):
                await aqueduct.request(conn.entrypoint, lambda reply: {"reply": reply, "x": payload})
        else:
            for _ in range(n):
                await conn.entrypoint.send(payload)
        await conn.entrypoint.finish()
        await asyncio.sleep(float(sys.argv[5]))
asyncio.run(main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4] == "calls"))
"""


async def _python_row(name: str, server: Any, fp: str, counter: Counter, n: int, calls: bool) -> Row:
    counter.reset(n)
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", PY_CLIENT, str(server.address[1]), fp, str(n),
                                                "calls" if calls else "stream", "0.5")
    try:
        await asyncio.wait_for(counter.done.wait(), 600)
    finally:
        await proc.wait()
    return Row(name, n, counter.count, counter.last - counter.first, counter.cpu1 - counter.cpu0)


def _blob_server(blobs: dict[str, bytes]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = PAGE.encode() if self.path == "/" else blobs.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            kind = {"/": "text/html", "/aqueduct.js": "text/javascript"}.get(self.path, "application/octet-stream")
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


async def _browser_row(name: str, page: Any, call: str, url: str, cert_hex: str, counter: Counter, n: int) -> Row:
    counter.reset(n)
    await page.reload()
    await page.wait_for_function("typeof window.tsCalls === 'function'")
    await page.evaluate(f"([u, h, n]) => {call}(u, h, n)", [url, cert_hex, n])
    await asyncio.wait_for(counter.done.wait(), 600)
    return Row(name, n, counter.count, counter.last - counter.first, counter.cpu1 - counter.cpu0)


def bundle() -> bytes:
    """The TypeScript client's browser bundle (built by `npm run bundle` in clients/typescript when missing)."""
    package = Path(__file__).resolve().parent.parent / "clients" / "typescript"
    built = package / "bundle" / "aqueduct.js"
    if not built.exists():
        subprocess.run(["npm", "run", "--silent", "bundle"], cwd=package, check=True, capture_output=True)
    return built.read_bytes()


async def measure(messages: int, calls: int, rounds: int, chromium: str = "/usr/bin/chromium") -> list[Row]:
    """Every row, `rounds` times (the browser's pages and the Python client alternate)."""
    from playwright.async_api import async_playwright

    counter = Counter()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        cert = make_browser_cert(Path(tmp))
        ctl, msgs = client_stream_bytes(messages)
        httpd = _blob_server({"/ctl": ctl, "/msgs": msgs, "/aqueduct.js": bundle()})
        try:
            async with aqueduct.serve("127.0.0.1", 0, cert=cert.cert, key=cert.key, webtransport=True) as server:
                tasks: set[asyncio.Task[None]] = set()

                async def accept() -> None:
                    async for conn in server:
                        task = asyncio.ensure_future(_handle(conn, counter))
                        tasks.add(task)
                        task.add_done_callback(tasks.discard)

                acceptor = asyncio.ensure_future(accept())
                url = f"https://127.0.0.1:{server.address[1]}/aqueduct"
                async with async_playwright() as playwright:
                    browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                    page = await browser.new_page()
                    await page.goto(f"http://127.0.0.1:{httpd.server_address[1]}/")
                    for _ in range(rounds):
                        rows.append(await _python_row("python-quic", server, cert.hex, counter, messages, False))
                        rows.append(await _browser_row("chromium-raw", page, "blast", url, cert.hex, counter,
                                                       messages))
                        rows.append(await _browser_row("chromium-typescript", page, "tsStream", url, cert.hex,
                                                       counter, messages))
                        if calls:
                            rows.append(await _python_row("python-quic calls", server, cert.hex, counter, calls,
                                                          True))
                            rows.append(await _browser_row("chromium-typescript calls", page, "tsCalls", url,
                                                           cert.hex, counter, calls))
                    await browser.close()
                acceptor.cancel()
        finally:
            httpd.shutdown()
            httpd.server_close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    rows = asyncio.run(measure(args.messages, args.calls, args.rounds, args.chromium))
    for row in rows:
        print(row.line())
    print("medians:")
    for name in dict.fromkeys(r.name for r in rows):
        mine = [r for r in rows if r.name == name]
        print(f"  {name:<26} {statistics.median(r.rate for r in mine):>12,.0f}/s "
              f"{statistics.median(r.cpu / max(r.counted, 1) * 1e6 for r in mine):>8.1f} server CPU us/msg")


if __name__ == "__main__":
    main()

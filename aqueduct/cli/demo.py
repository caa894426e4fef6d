"""`aqueduct demo`: a server and a client on loopback showing what channels-in-messages buy.

With a freshly generated dev certificate it runs, concurrently: a request
carrying its own reply channel; a subscription streaming updates on a
channel handed over in a message (ended by a finish); an unreliable
telemetry lane; and an upload the client cancels halfway. A status line
shows progress live; a summary (messages, bytes, RTT) follows. Then the
server meets peers that misbehave (demo_guards.py: a reader that stops
early, a greedy client, one connection too many, a wrong token), and the demo scrapes the
server's Prometheus endpoint, where every family has counted something.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from ..api.connection import Connection
from ..api.endpoints import connect, serve
from ..api.halves import Receiver, channel
from ..errors import AqueductError, ChannelCancelled
from ..metrics import FAMILIES, scrape_totals
from ..quic.certs import make_dev_certs
from ._record import add_record_arguments, recorder
from .demo_guards import AUTH, SERVER_LIMITS, SERVER_SETTINGS, check_token, feed, run_scenes

UPDATES = 300
SAMPLES = 400
CHUNKS_BEFORE_CANCEL = 25


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the `demo` subcommand."""
    p = sub.add_parser("demo", help="run a live loopback demo of Aqueduct (no arguments needed)")
    add_record_arguments(p, "both sides' traffic")
    p.add_argument("--metrics-port", type=int, default=0, metavar="P",
                   help="serve the server's Prometheus metrics on 127.0.0.1:P during the demo (default: a free port)")
    p.set_defaults(func=run)


# ---- the server side: one task per request, dispatched on "op" ----
async def _time(req: dict[str, Any]) -> None:
    async with req["reply"] as reply:
        await reply.send({"time": time.strftime("%H:%M:%S"), "served_by": "demo server"})


async def _subscribe(req: dict[str, Any]) -> None:
    async with req["updates"] as updates:
        price = 100.0
        for seq in range(UPDATES):
            price += (seq % 7 - 3) * 0.05
            await updates.send({"topic": req["topic"], "seq": seq, "price": round(price, 2)})
            await asyncio.sleep(0.008)  # a feed ticks; it also gives the live display something to show


async def _telemetry(req: dict[str, Any]) -> None:
    count = 0
    lane: Receiver[Any] = req["lane"]
    with contextlib.suppress(AqueductError):
        async for _sample in lane:
            count += 1
    async with req["report"] as report:
        await report.send({"samples_received": count})


async def _upload(req: dict[str, Any]) -> None:
    chunks: Receiver[Any] = req["chunks"]
    got, outcome = 0, "finished"
    try:
        async for _chunk in chunks:
            got += 1
    except ChannelCancelled:
        outcome = "cancelled"
    async with req["result"] as result:
        await result.send({"outcome": outcome, "chunks": got})


HANDLERS = {"time": _time, "subscribe": _subscribe, "telemetry": _telemetry, "upload": _upload, "feed": feed}


async def _serve_connection(conn: Connection[Any]) -> None:
    tasks = set()
    with contextlib.suppress(AqueductError):  # (a client the server closed for a limit)
        async for req in conn.entrypoint:
            tasks.add(asyncio.ensure_future(HANDLERS[req["op"]](req)))
    await asyncio.gather(*tasks, return_exceptions=True)


# ---- the client side ----
@dataclass
class Progress:
    """What the live display shows."""

    updates: int = 0
    samples_sent: int = 0
    chunks_sent: int = 0
    lines: list[str] = field(default_factory=list)
    shown: int = 0

    def flush(self, tty: bool) -> None:
        """Print the milestone lines not shown yet."""
        while self.shown < len(self.lines):
            print(("\r\033[K" if tty else "") + "  ✓ " + self.lines[self.shown], flush=True)
            self.shown += 1

    def status(self, conn: Connection[Any]) -> str:
        return (f"  subscription {self.updates:3d}/{UPDATES} | telemetry sent {self.samples_sent:3d}/{SAMPLES} | "
                f"upload {self.chunks_sent:2d} chunks | rtt {conn.rtt * 1000:5.2f} ms")


async def _client(conn: Connection[Any], p: Progress) -> None:
    async def request_reply() -> None:
        reply_tx, reply_rx = channel()
        await conn.entrypoint.send({"op": "time", "reply": reply_tx})
        answer = await reply_rx.recv()
        p.lines.append(f"request/reply: the server says it is {answer['time']} (reply came on its own channel)")

    async def subscription() -> None:
        updates_tx, updates_rx = channel()
        await conn.entrypoint.send({"op": "subscribe", "topic": "AQDT", "updates": updates_tx})
        last = None
        async for update in updates_rx:
            p.updates += 1
            last = update
        assert last is not None
        p.lines.append(f"subscription: {p.updates} updates streamed, then finished (last price {last['price']})")

    async def telemetry() -> None:
        lane_tx, lane_rx = channel(mode="unreliable")
        report_tx, report_rx = channel()
        await conn.entrypoint.send({"op": "telemetry", "lane": lane_rx, "report": report_tx})
        async with lane_tx:
            for i in range(SAMPLES):
                await lane_tx.send({"cpu": i % 100, "t": time.monotonic()})
                p.samples_sent += 1
                await asyncio.sleep(0.005)
        report = await report_rx.recv()
        p.lines.append(f"telemetry: {report['samples_received']}/{SAMPLES} unreliable samples arrived (datagrams)")

    async def upload() -> None:
        chunks_tx, chunks_rx = channel()
        result_tx, result_rx = channel()
        await conn.entrypoint.send({"op": "upload", "chunks": chunks_rx, "result": result_tx})
        for i in range(CHUNKS_BEFORE_CANCEL):
            await chunks_tx.send(bytes([i]) * 512)
            p.chunks_sent += 1
            await asyncio.sleep(0.04)
        chunks_tx.cancel()
        result = await result_rx.recv()
        p.lines.append(f"cancel: the client cancelled its upload; the server saw '{result['outcome']}' "
                       f"after {result['chunks']} chunks")

    await asyncio.gather(request_reply(), subscription(), telemetry(), upload())


async def _display(conn: Connection[Any], p: Progress, tty: bool) -> None:
    ticks = 0
    while True:
        p.flush(tty)
        if tty:
            print("\r\033[K" + p.status(conn), end="", flush=True)
        elif ticks % 5 == 0:
            print(p.status(conn), flush=True)
        ticks += 1
        await asyncio.sleep(0.1)


async def _show_metrics(host: str, port: int) -> None:
    """Scrape the demo server's metrics endpoint, as Prometheus would, and say what it holds."""
    totals = await scrape_totals(host, port)
    zero = [name.removeprefix("aqueduct_") for name in FAMILIES if not totals.get(name)]
    print(f"  metrics scraped from http://{host}:{port}/metrics: {len(FAMILIES)} families, "
          f"{len(FAMILIES) - len(zero)} non-zero" + (f" (zero: {', '.join(zero)})" if zero else ""))
    shown = ("messages_sent", "messages_received", "acked_messages", "nacked_messages", "limit_closes",
             "connections_refused")
    print("   " + ", ".join(f"{name} {totals[f'aqueduct_{name}']:,.0f}" for name in shown))


async def _main(record: Any = None, metrics_port: int = 0) -> int:
    tty = sys.stdout.isatty()
    with tempfile.TemporaryDirectory(prefix="aqueduct-demo-") as tmp:
        certs = make_dev_certs(tmp)
        print("aqueduct demo: a server and a client on loopback over QUIC + TLS (generated dev CA)")
        async with serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, record=record,
                         metrics=("127.0.0.1", metrics_port), engine_config=SERVER_LIMITS,
                         settings=SERVER_SETTINGS, authenticate=check_token) as server:
            host, port = server.address
            print(f"  server listening on {host}:{port}")
            served: list[asyncio.Future[None]] = []

            async def accept() -> None:
                async for conn in server:
                    served.append(asyncio.ensure_future(_serve_connection(conn)))

            acceptor = asyncio.ensure_future(accept())
            started = time.perf_counter()
            async with connect(f"aqueduct://{host}:{port}", ca=certs.ca, record=record, headers=AUTH) as conn:
                handshake_ms = (time.perf_counter() - started) * 1000
                print(f"  connected in {handshake_ms:.1f} ms (handshake + headers), codec {conn.codec.name}")
                progress = Progress()
                display = asyncio.ensure_future(_display(conn, progress, tty))
                try:
                    await asyncio.wait_for(_client(conn, progress), 60)
                finally:
                    display.cancel()
                    progress.flush(tty)
                    if tty:
                        print("\r\033[K", end="")
                elapsed = time.perf_counter() - started
                rtt, rtt_min = conn.rtt, conn.rtt_min
                print("misbehaving peers:")
                for line in await asyncio.wait_for(run_scenes(f"aqueduct://{host}:{port}", certs.ca, conn), 30):
                    print("  ✓ " + line)
                s = conn.stats
                print("summary:")
                print(f"  client sent {s.messages_sent} messages ({s.bytes_sent} payload bytes), "
                      f"received {s.messages_received} ({s.bytes_received} bytes)")
                print(f"  RTT: smoothed {rtt * 1000:.2f} ms under load, minimum {rtt_min * 1000:.2f} ms; "
                      f"{elapsed:.2f} s of traffic")
                assert server.metrics_address is not None
                await _show_metrics(*server.metrics_address)
            acceptor.cancel()
            for task in served:
                task.cancel()
    return 0


def run(args: argparse.Namespace) -> int:
    """Run the demo."""
    rec = recorder(args)
    try:
        code = asyncio.run(_main(rec, args.metrics_port))
    finally:
        if rec is not None:
            rec.close()
    if args.record:
        print(f"recorded into {args.record}; analyze it with: aqueduct analyze {args.record}")
    return code

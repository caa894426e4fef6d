"""Connection-level rows of `aqueduct bench --connections`: handshakes per second, memory per idle
connection, and a fresh connection's echo while the server holds many idle ones.

Each kind of server (Aqueduct with default settings but raised connection limits; raw aioquic issuing
session tickets as Aqueduct does) runs alone in its own process (connpeer.py), so its resident memory is
its own. For each kind, in alternating rounds:

- handshakes/s, sequential: connect (to the point each API calls connected: Aqueduct's `connect()` returns,
  aioquic's handshake completes), then start its close (not waited for: a close lingers for QUIC's closing
  period); as many as fit in the window, one after the other;
- handshakes/s, 32 concurrent: the same with 32 clients at once.

Then, per kind, in a fresh server process: the round-trip p50 of 64 B echoes on a fresh connection to the
idle server; then `idle` connections opened (32 at a time, none started after `idle_budget` seconds) and
held by a holder process of their own (this module's `main`: the measuring process's echo is not slowed
by them); the server's RSS growth divided by the connections it holds (its memory per idle connection);
then a new connection's connect time and echo p50 while the server holds them all (up to three tries: a
connect that gets no answer is counted). Aqueduct's idle clients keep their connections alive with their
keep-alive PINGs (default every 10 s; servers send none), raw aioquic's with a long idle timeout: each as
its users would run it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aqueduct

from ..core.app import Delivery
from . import rawquic
from .clients import AqueductClient, percentile
from .connpeer import RAW_IDLE_TIMEOUT
from .rawquic import RawQuicClient

KINDS = {"aqueduct": "aqueduct ordered raw", "aioquic": "aioquic"}
"""Connection server kind -> the bench transport whose row its figures join."""
CONCURRENCY = 32
LOADED_SAMPLES = 5
"""New connections (connect time, echo p50) measured against the server holding the idle ones."""


class ConnectionPeer:
    """A connpeer.py process of one kind."""

    def __init__(self, kind: str, cert: Path, key: Path) -> None:
        cmd = [sys.executable, "-m", "aqueduct.bench.connpeer", "--kind", kind, "--cert", str(cert), "--key",
               str(key)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(10)
            raise RuntimeError(f"the {kind} connection peer failed to start")
        info = json.loads(line)
        self.kind, self.port, self.pid = kind, int(info["port"]), int(info["pid"])

    async def memory(self) -> dict[str, int]:
        """{"rss": bytes, "connections": held} after a collection in the server."""
        def ask() -> dict[str, int]:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write("mem\n")
            self.proc.stdin.flush()
            return json.loads(self.proc.stdout.readline())  # type: ignore[no-any-return]
        return await asyncio.to_thread(ask)

    def stop(self) -> None:
        """End the process (it closes on end of input)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


Opener = Callable[[], Awaitable[Callable[[], Awaitable[None]]]]
"""Opens one connection; returns its close."""


def opener(kind: str, port: int, ca: Path) -> Opener:
    """How to open (and later close) one connection of `kind`."""
    if kind == "aqueduct":
        url = f"aqueduct://127.0.0.1:{port}"

        async def open_aq() -> Callable[[], Awaitable[None]]:
            conn = await aqueduct.connect(url, ca=ca, codec=aqueduct.RawCodec())
            return conn.close
        return open_aq

    async def open_raw() -> Callable[[], Awaitable[None]]:
        return await rawquic.open_connection(port, ca, RAW_IDLE_TIMEOUT)
    return open_raw


async def handshake_rate(open_one: Opener, window: float, concurrency: int) -> float:
    """Connections opened per second for `window` seconds with `concurrency` clients at once (`handshakes`)."""
    done, took = await handshakes(open_one, window, concurrency)
    return done / took


async def handshakes(open_one: Opener, window: float, concurrency: int) -> tuple[int, float]:
    """(connections opened, seconds) for `window` seconds with `concurrency` clients at once. Each is closed
    as soon as it is open, but its close (which lingers for the closing period) is not waited for: the rate
    is of handshakes, and the closes' work still runs alongside."""
    done = 0
    closing: list[asyncio.Future[None]] = []
    deadline = time.perf_counter() + window

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            close = await open_one()
            done += 1
            closing.append(asyncio.ensure_future(close()))

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    took = time.perf_counter() - start
    await asyncio.gather(*closing, return_exceptions=True)
    return done, took


Close = Callable[[], Awaitable[None]]


async def open_many(open_one: Opener, count: int, concurrency: int = CONCURRENCY,
                    budget: float = float("inf")) -> tuple[list[Close], int]:
    """Try to open `count` connections, `concurrency` at a time, starting no new one after `budget` seconds;
    (their closes, attempts that failed). A failed attempt (no answer in time: the server or the machine is
    saturated) is counted, not retried."""
    closes: list[Close] = []
    failed = 0
    left = count
    deadline = time.perf_counter() + budget

    async def worker() -> None:
        nonlocal left, failed
        while left > 0 and time.perf_counter() < deadline:
            left -= 1
            try:
                closes.append(await open_one())
            except (aqueduct.AqueductError, OSError, TimeoutError, ConnectionError):
                failed += 1

    await asyncio.gather(*(worker() for _ in range(min(concurrency, count))))
    return closes, failed


async def echo_p50(kind: str, port: int, ca: Path, window: float) -> tuple[float, float]:
    """(connect ms, 64 B round-trip p50 us) on a new connection."""
    client: AqueductClient | RawQuicClient = (AqueductClient(port, ca, "raw", Delivery.ORDERED) if kind == "aqueduct"
                                              else RawQuicClient(port, ca))
    start = time.perf_counter()
    await client.open()
    took = time.perf_counter() - start
    try:
        lat = await client.rtt(64, window, 1_000_000)
    finally:
        await client.close()
    return took * 1000, percentile(lat, 0.5) * 1e6


async def measure(certs: Any, window: float, rounds: int, idle: int,
                  record: Callable[[str, str, float], None], progress: Callable[[str], None],
                  idle_budget: float = float("inf")) -> dict[str, Any]:
    """Every connection row; `record(transport, workload, value)` takes each sample. Returns the hold facts."""
    peers = {kind: ConnectionPeer(kind, certs.cert, certs.key) for kind in KINDS}
    try:
        for rnd in range(rounds):
            order = list(KINDS) if rnd % 2 == 0 else list(reversed(KINDS))
            for kind in order:
                progress(f"connections round {rnd + 1}/{rounds}: {kind} handshakes")
                open_one = opener(kind, peers[kind].port, certs.ca)
                record(KINDS[kind], "hs_seq", await handshake_rate(open_one, window, 1))
                record(KINDS[kind], "hs_32", await handshake_rate(open_one, window, CONCURRENCY))
    finally:
        for p in peers.values():
            p.stop()
    holds: dict[str, Any] = {}
    for kind in KINDS:
        if idle <= 0:
            break
        peer = ConnectionPeer(kind, certs.cert, certs.key)
        holder: subprocess.Popen[str] | None = None
        try:
            connect_ms, idle_rtt = await echo_p50(kind, peer.port, certs.ca, window)
            before = await peer.memory()
            for _ in range(50):  # the echo connection's close may still linger in the server
                if before["connections"] == 0:
                    break
                await asyncio.sleep(0.1)
                before = await peer.memory()
            progress(f"connections: {kind} opening {idle:,} idle connections (a holder process)")
            holder = subprocess.Popen([sys.executable, "-m", "aqueduct.bench.connections", "--kind", kind, "--port",
                                       str(peer.port), "--ca", str(certs.ca), "--count", str(idle), "--budget",
                                       str(idle_budget)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert holder.stdout is not None
            line = await asyncio.to_thread(holder.stdout.readline)
            if not line:
                raise RuntimeError(f"the {kind} holder process failed ({holder.wait(10)})")
            opened = json.loads(line)
            after = await peer.memory()
            held = after["connections"] - before["connections"]
            name = KINDS[kind]
            record(name, "conn_mem", (after["rss"] - before["rss"]) / max(1, held))
            record(name, "rtt_idle_server", idle_rtt)
            loaded_failed = loaded = 0
            # a new connection may not get in at all on a saturated machine (say so); a connect takes a few
            # milliseconds, but one alone once read 196 ms (its next 15 at most 12 ms): the row is the median
            # of LOADED_SAMPLES
            while loaded < LOADED_SAMPLES and loaded_failed < 3:
                try:
                    loaded_connect_ms, loaded_rtt = await echo_p50(kind, peer.port, certs.ca, window)
                except (aqueduct.AqueductError, OSError, TimeoutError):
                    loaded_failed += 1
                    continue
                record(name, "rtt_loaded", loaded_rtt)
                record(name, "connect_loaded", loaded_connect_ms)
                loaded += 1
            holds[kind] = {"asked": idle, "held": held, "failed": opened["failed"], "opened_seconds": opened["seconds"],
                           "connect_ms_idle_server": connect_ms, "loaded_connects_failed": loaded_failed}
            progress(f"connections: {kind} closing {held:,}")
        finally:
            if holder is not None:
                assert holder.stdin is not None
                holder.stdin.close()
                try:
                    await asyncio.to_thread(holder.wait, 120)
                except subprocess.TimeoutExpired:
                    holder.kill()
            peer.stop()
    return holds


async def _hold(kind: str, port: int, ca: Path, count: int, budget: float) -> None:
    """The holder process: open the connections, print {"opened", "failed", "seconds"}, keep them until stdin
    ends, close them."""
    started = time.perf_counter()
    closes, failed = await open_many(opener(kind, port, ca), count, budget=budget)
    print(json.dumps({"opened": len(closes), "failed": failed, "seconds": time.perf_counter() - started}),
          flush=True)
    await asyncio.to_thread(sys.stdin.read)
    for i in range(0, len(closes), 256):
        await asyncio.gather(*(c() for c in closes[i:i + 256]), return_exceptions=True)


def main() -> None:
    """Command-line entry of the holder process (see `measure`)."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", choices=list(KINDS), required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--budget", type=float, required=True)
    args = ap.parse_args()
    asyncio.run(_hold(args.kind, args.port, Path(args.ca), args.count, args.budget))


if __name__ == "__main__":
    main()

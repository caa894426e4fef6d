"""Goodput under loss: the extras that ask (e.g. Marlin Stream), Aqueduct-on-QUIC and raw aioquic bulk through the
impairment proxy, in one run.

    aqueduct bench --loss-curves        (or: python -m aqueduct.bench.loss proxy ...: the proxy process)

Each measured path gets one `ImpairProxy` per loss level (independent loss,
both directions, seeded), all hosted in one child process so relaying does
not share the measuring process's CPU; their listening sockets get large
kernel buffers so the proxy itself drops nothing but what it is told to. A
cell is bulk MB/s (256 KiB messages for `window` seconds, rate = the peer's
count / time to the count's arrival, as the lossless rows) through that
proxy. The curve's ratios compare each loss level with the same path at 0%
loss, through the same proxy. TCP cannot pass a UDP proxy (and impairing
the loopback device would disturb every other process): netloss.py measures
TCP, Stream and Aqueduct under the same kernel-level loss in a network
namespace of their own, when run as root.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.app import Delivery
from .clients import AqueductClient
from .extras import extra_named, extras, loss_paths
from .peer import stdin_closed
from .rawquic import RawQuicClient

LOSSES = (0.0, 0.01, 0.05)
PATHS = (*loss_paths(), "aqueduct ordered raw", "aioquic")
"""The measured paths (extras.py's that ask first, e.g. "marlin stream"; raw aioquic: the rawquic.py baseline)."""
PORT_KEYS = {**{e.name: e.key for e in extras() if e.loss_curves}, "aqueduct ordered raw": "aqueduct-raw",
             "aioquic": "aioquic"}
"""The peer's port key of each path."""
BULK = 256 * 1024
PROXY_BUFFER = 8 << 20


def _key(path: str, loss: float) -> str:
    return f"{path}@{loss}"


def start_proxies(ports: dict[str, int], losses: tuple[float, ...] = LOSSES,
                  seed: int = 1) -> tuple[subprocess.Popen[str], dict[str, int]]:
    """The proxy process and the port of each (path, loss) proxy, keyed `path@loss`."""
    cmd = [sys.executable, "-m", "aqueduct.bench.loss", "proxy", "--seed", str(seed),
           "--losses", ",".join(str(x) for x in losses)]
    for path in PATHS:
        cmd += ["--target", f"{path}={ports[PORT_KEYS[path]]}"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(10)
        raise RuntimeError("the impairment proxy process failed to start")
    return proc, json.loads(line)


async def measure(proxy_ports: dict[str, int], ca: Path, window: float, rounds: int,
                  progress: Callable[[str], None] = lambda _: None,
                  losses: tuple[float, ...] = LOSSES) -> dict[str, dict[str, list[float]]]:
    """MB/s samples per path and loss level (keys: path, then str(loss)), rounds alternating paths."""
    samples: dict[str, dict[str, list[float]]] = {p: {} for p in PATHS}
    for rnd in range(rounds):
        shift = rnd % len(PATHS)
        for path in PATHS[shift:] + PATHS[:shift]:
            for loss in losses:
                progress(f"loss round {rnd + 1}/{rounds}: {path} at {loss:.0%} loss")
                port = proxy_ports[_key(path, loss)]
                extra = extra_named(path)
                client: Any = (extra.client(port) if extra is not None else RawQuicClient(port, ca)
                               if path == "aioquic" else AqueductClient(port, ca, "raw", Delivery.ORDERED))
                samples[path].setdefault(str(loss), []).append(await bulk_mb_s(client, window))
    return samples


async def bulk_mb_s(client: Any, window: float) -> float:
    """One bulk cell: open `client`, send BULK-byte messages for `window` seconds, close; MB/s arrived."""
    await client.open()
    try:
        r = await client.oneway(BULK, window, 100_000)
    finally:
        await client.close()
    return float(r.nbytes / r.seconds / 1e6)


def curves(samples: dict[str, dict[str, list[float]]]) -> list[dict[str, Any]]:
    """One row per (path, loss): median MB/s, min, max, and the ratio to the path's 0% median."""
    out = []
    for path, by_loss in samples.items():
        base = statistics.median(by_loss["0.0"]) if by_loss.get("0.0") else None
        for loss, values in by_loss.items():
            med = statistics.median(values)
            out.append({"path": path, "loss": float(loss), "mb_s": med, "low": min(values), "high": max(values),
                        "x_lossless": med / base if base else None})
    return out


# ---------------------------------------------------------------- the proxy process


async def _serve_proxies(targets: list[tuple[str, int]], losses: list[float], seed: int) -> None:
    from aqueduct.testing.impair import Impairment, ImpairProxy

    proxies = []
    ports = {}
    for path, port in targets:
        for loss in losses:
            imp = Impairment(loss=loss)
            proxy = await ImpairProxy.start(("127.0.0.1", port), up=imp, down=imp, seed=seed)
            sock = proxy._transport.get_extra_info("socket") if proxy._transport is not None else None
            if sock is not None:
                for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
                    with contextlib.suppress(OSError):
                        sock.setsockopt(socket.SOL_SOCKET, opt, PROXY_BUFFER)
            proxies.append(proxy)
            ports[_key(path, loss)] = proxy.address[1]
    print(json.dumps(ports), flush=True)
    await stdin_closed()
    for proxy in proxies:
        proxy.close()


def main() -> None:
    """`python -m aqueduct.bench.loss proxy --target NAME=PORT ... --losses 0,0.01,0.05`: serve until stdin closes."""
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["proxy"])
    ap.add_argument("--target", action="append", default=[])
    ap.add_argument("--losses", default=",".join(str(x) for x in LOSSES))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    targets = [(t.rpartition("=")[0], int(t.rpartition("=")[2])) for t in args.target]
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_proxies(targets, [float(x) for x in args.losses.split(",")], args.seed))


if __name__ == "__main__":
    main()

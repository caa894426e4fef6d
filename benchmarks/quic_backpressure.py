"""Receiver-paced flow control under load: a fast producer, a receiver taking one message per 10 ms.

    python benchmarks/quic_backpressure.py [--seconds 20] [--offer-mib 1024] [--message-kib 16]

The receiver runs in its own process (so its RSS is its own) with the
given stream/connection windows; it samples VmRSS every 50 ms. The producer
offers `--offer-mib` MiB (stopping after `--seconds`), then closes the
connection. Prints one JSON object: the receiver's RSS baseline (after
accepting the connection, before the flood), its peak, and their difference
against the configured window; and the bytes sent vs taken by the receiver.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aqueduct
from aqueduct.quic.certs import make_dev_certs

MIB = 1024 * 1024


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


async def receiver(args: argparse.Namespace) -> None:
    if args.unpaced:  # for comparison only: aioquic's own window updates (grow as data arrives)
        from aioquic.quic.connection import QuicConnection

        from aqueduct.quic.aioquic_connection import PacedQuicConnection

        PacedQuicConnection._write_connection_limits = QuicConnection._write_connection_limits  # type: ignore[method-assign]
        PacedQuicConnection._write_stream_limits = QuicConnection._write_stream_limits  # type: ignore[method-assign]
    settings = aqueduct.TransportSettings(stream_window=args.window_kib * 1024,
                                          connection_window=args.window_kib * 1024)
    async with aqueduct.serve("127.0.0.1", 0, cert=args.cert, key=args.key, settings=settings) as server:
        print(f"listening on {server.address[0]}:{server.address[1]}", flush=True)
        conn = await server.accept()
        baseline = peak = _rss()
        taken = taken_bytes = 0

        async def sample() -> None:
            nonlocal peak
            while True:
                peak = max(peak, _rss())
                await asyncio.sleep(0.05)

        sampler = asyncio.ensure_future(sample())
        try:
            async for msg in conn.entrypoint:
                taken += 1
                taken_bytes += len(msg)
                await asyncio.sleep(args.interval)  # the slow application: one message per interval
        except aqueduct.ConnectionLost:
            pass
        sampler.cancel()
        peak = max(peak, _rss())
        print(json.dumps({"rss_baseline": baseline, "rss_peak": peak, "taken": taken, "taken_bytes": taken_bytes}),
              flush=True)


async def producer(args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        certs = make_dev_certs(tmp)
        proc = subprocess.Popen(
            [sys.executable, __file__, "--role", "receiver", "--cert", str(certs.cert), "--key", str(certs.key),
             "--window-kib", str(args.window_kib), "--interval", str(args.interval),
             *(["--unpaced"] if args.unpaced else [])],
            stdout=subprocess.PIPE, text=True,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            host, port = line.removeprefix("listening on ").rsplit(":", 1)
            chunk = b"\x00" * (args.message_bytes or args.message_kib * 1024)
            offered = args.offer_mib * MIB
            sent, outcome = 0, "stopped after the time limit"
            async with aqueduct.connect(f"aqueduct://{host}:{port}", ca=certs.ca) as conn:
                deadline = time.monotonic() + args.seconds
                while sent < offered and time.monotonic() < deadline:
                    await asyncio.wait_for(conn.entrypoint.send(chunk), max(0.01, deadline - time.monotonic()))
                    sent += len(chunk)
                if sent >= offered:
                    outcome = "offered everything"
        except TimeoutError:
            pass
        except aqueduct.ConnectionLost as exc:
            outcome = f"the receiver closed the connection: {exc}"
        finally:
            out, _ = proc.communicate(timeout=60)
        stats = json.loads(out.strip().splitlines()[-1])
        window = args.window_kib * 1024
        return {
            "seconds": args.seconds,
            "paced": not args.unpaced,
            "offered_mib": args.offer_mib,
            "message_bytes": len(chunk),
            "window_mib": window / MIB,
            "producer": outcome,
            "sent_mib": sent / MIB,
            "taken_mib": stats["taken_bytes"] / MIB,
            "taken_messages": stats["taken"],
            "rss_baseline_mib": stats["rss_baseline"] / MIB,
            "rss_peak_mib": stats["rss_peak"] / MIB,
            "rss_growth_mib": (stats["rss_peak"] - stats["rss_baseline"]) / MIB,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--role", choices=["producer", "receiver"], default="producer")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--offer-mib", type=int, default=1024)
    parser.add_argument("--message-kib", type=int, default=16)
    parser.add_argument("--message-bytes", type=int, default=0, help="overrides --message-kib (small messages)")
    parser.add_argument("--window-kib", type=int, default=1024, help="stream and connection receive window")
    parser.add_argument("--interval", type=float, default=0.01)
    parser.add_argument("--unpaced", action="store_true", help="receiver uses aioquic's own window growth")
    parser.add_argument("--cert")
    parser.add_argument("--key")
    args = parser.parse_args()
    if args.role == "receiver":
        asyncio.run(receiver(args))
    else:
        print(json.dumps(asyncio.run(producer(args)), indent=1))


if __name__ == "__main__":
    main()

"""`aeron_compat stream listen|send|bench`: the Stream endpoint from the command line.

Theory: `listen` accepts connections and, per stream, reads to the FIN and
answers with the SHA-256 of what it read (then its FIN), printing one JSON
line per stream; `send` writes a file or N random bytes on one stream and
checks the digest it gets back; `bench` runs both ends in one process on
loopback and prints bulk MB/s and 64-byte messages/s as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
import time
from typing import Any

from aeron_compat.marlin.aio import StreamConnection, StreamEndpoint
from aeron_compat.marlin.packets import PROFILES, Profile


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


async def serve_connection(conn: StreamConnection, out: Any = None) -> None:
    """Answer each stream of `conn` with the digest of its bytes, until the connection ends."""
    tasks: set[asyncio.Task[None]] = set()

    async def one(reader: asyncio.StreamReader, writer: Any) -> None:
        h = hashlib.sha256()
        n = 0
        while chunk := await reader.read(1 << 16):
            h.update(chunk)
            n += len(chunk)
        writer.write(h.hexdigest().encode())
        writer.write_eof()
        await writer.drain()
        if out is not None:
            print(json.dumps({"peer": list(conn.peer), "bytes": n, "sha256": h.hexdigest()}), file=out, flush=True)

    try:
        while True:
            reader, writer = await conn.accept_stream()
            t = asyncio.ensure_future(one(reader, writer))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
    except Exception:
        for t in tasks:
            t.cancel()


async def _listen(args: argparse.Namespace) -> int:
    host, port = _addr(args.address)
    ep = await StreamEndpoint.listen(host, port, profile=args.profile)
    print(json.dumps({"listening": list(ep.address)}), flush=True)
    served = 0
    serving: set[asyncio.Task[None]] = set()
    try:
        while not args.count or served < args.count:
            conn = await ep.accept()
            served += 1
            if args.count:
                await serve_connection(conn, sys.stdout)
            else:
                t = asyncio.ensure_future(serve_connection(conn, sys.stdout))
                serving.add(t)
                t.add_done_callback(serving.discard)
    finally:
        ep.close()
    return 0


async def send_bytes(conn: StreamConnection, data: bytes) -> str:
    """Send `data` on a new stream; return the digest the listener answers."""
    reader, writer = conn.open_stream()
    for i in range(0, len(data), 1 << 16):
        writer.write(data[i:i + (1 << 16)])
        await writer.drain()
    writer.write_eof()
    await writer.drain()
    return (await reader.read()).decode()


async def _send(args: argparse.Namespace) -> int:
    data = open(args.file, "rb").read() if args.file else os.urandom(args.bytes)
    ep = await StreamEndpoint.bind(profile=args.profile)
    try:
        start = time.perf_counter()
        conn = await ep.dial(_addr(args.address))
        digest = await send_bytes(conn, data)
        took = time.perf_counter() - start
    finally:
        ep.close()
    ok = digest == hashlib.sha256(data).hexdigest()
    print(json.dumps({"bytes": len(data), "seconds": round(took, 3), "MB/s": round(len(data) / took / 1e6, 1),
                      "checksum_ok": ok}))
    return 0 if ok else 1


async def bench(total: int, messages: int, profile: Profile = "seed") -> dict[str, float]:
    """Bulk MB/s and 64 B messages/s over loopback, both ends in this process."""
    server = await StreamEndpoint.listen("127.0.0.1", 0, profile=profile)
    client = await StreamEndpoint.bind(profile=profile)
    try:
        conn = await client.dial(server.address)
        sconn = await server.accept()
        task = asyncio.ensure_future(serve_connection(sconn))
        data = os.urandom(total)
        t0 = time.perf_counter()
        assert await send_bytes(conn, data) == hashlib.sha256(data).hexdigest()
        bulk = total / (time.perf_counter() - t0) / 1e6
        reader, writer = conn.open_stream()
        msg = b"m" * 64
        t0 = time.perf_counter()
        for _ in range(messages):
            writer.write(msg)
            await writer.drain()
        writer.write_eof()
        await writer.drain()
        await reader.read()
        rate = messages / (time.perf_counter() - t0)
        task.cancel()
        return {"bulk_MBps": round(bulk, 1), "msgs_per_s": round(rate)}
    finally:
        client.close()
        server.close()


def _bench(args: argparse.Namespace) -> int:
    print(json.dumps(asyncio.run(bench(args.bytes, args.messages, args.profile))))
    return 0


def add_parser(sub: Any) -> None:
    """Add `stream listen|send|bench` to the aeron_compat CLI's subparsers."""
    stream = sub.add_parser("stream", help="Marlin Stream over UDP: listen, send, bench")
    ssub = stream.add_subparsers(dest="stream_command", required=True)
    lis = ssub.add_parser("listen", help="accept connections; answer each stream with its SHA-256")
    lis.add_argument("address", help="HOST:PORT")
    lis.add_argument("--count", type=int, default=0, help="exit after serving COUNT connections")
    snd = ssub.add_parser("send", help="send a file or random bytes on one stream and check the digest")
    snd.add_argument("address", help="HOST:PORT")
    snd.add_argument("--file")
    snd.add_argument("--bytes", type=int, default=10_000_000)
    bnc = ssub.add_parser("bench", help="loopback bulk MB/s and 64 B messages/s")
    bnc.add_argument("--bytes", type=int, default=20_000_000)
    bnc.add_argument("--messages", type=int, default=100_000)
    for p in (lis, snd, bnc):
        p.add_argument("--profile", choices=PROFILES, default="seed")
    lis.set_defaults(func=lambda a: asyncio.run(_listen(a)))
    snd.set_defaults(func=lambda a: asyncio.run(_send(a)))
    bnc.set_defaults(func=_bench)

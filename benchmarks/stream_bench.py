"""Marlin Stream benchmark: bulk MB/s, 64 B messages/s, and goodput under loss, beside TCP.

    .venv/bin/python benchmarks/stream_bench.py [--mb 20] [--messages 50000] [--loss 0,0.01,0.05]

The listener runs in a child process (`aeron_compat stream listen`, which reads
each stream to its FIN and answers its SHA-256), the sender here; every row is
timed from the first write to the digest's arrival and checks the digest. The
loss rows pass every datagram, both directions, through the project's
`ImpairProxy` with independent loss, hosted in its own process
(`python -m aqueduct.bench.loss proxy`, as `aqueduct bench --loss-curves`
does), and their ratio is to the 0% row through the same proxy. TCP rows use
the same digest protocol on an asyncio TCP server in a child process. Prints
one JSON line per row. (`aqueduct bench` has the Stream rows beside TCP and
Aqueduct; `--loss-curves` adds Aqueduct-on-QUIC under the same loss.)
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
import time

from aeron_compat.marlin.aio import StreamEndpoint

TCP_SERVER = """
import asyncio, hashlib, sys
async def on(r, w):
    h = hashlib.sha256()
    while chunk := await r.read(1 << 16):
        h.update(chunk)
    w.write(h.hexdigest().encode()); await w.drain(); w.close()
async def main():
    s = await asyncio.start_server(on, "127.0.0.1", 0)
    print(s.sockets[0].getsockname()[1], flush=True)
    await s.serve_forever()
asyncio.run(main())
"""


async def _send(writer_write, drain, data: bytes, chunk: int) -> None:  # type: ignore[no-untyped-def]
    for i in range(0, len(data), chunk):
        writer_write(data[i:i + chunk])
        await drain()


async def stream_row(port: int, data: bytes, chunk: int) -> float:
    target = ("127.0.0.1", port)
    ep = await StreamEndpoint.bind()
    try:
        conn = await ep.dial(target)
        reader, writer = conn.open_stream()
        t0 = time.perf_counter()
        await _send(writer.write, writer.drain, data, chunk)
        writer.write_eof()
        digest = (await reader.read()).decode()
        took = time.perf_counter() - t0
        assert digest == hashlib.sha256(data).hexdigest()
        conn.close()
        return took
    finally:
        ep.close()


async def tcp_row(port: int, data: bytes, chunk: int) -> float:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    t0 = time.perf_counter()
    await _send(writer.write, writer.drain, data, chunk)
    writer.write_eof()
    digest = (await reader.read()).decode()
    took = time.perf_counter() - t0
    assert digest == hashlib.sha256(data).hexdigest()
    writer.close()
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=20)
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--loss", default="0,0.01,0.05")
    opts = ap.parse_args()
    bulk = os.urandom(int(opts.mb * 1e6))
    msgs = os.urandom(64 * opts.messages)
    listener = subprocess.Popen([sys.executable, "-m", "aeron_compat", "stream", "listen", "127.0.0.1:0"],
                                stdout=subprocess.PIPE, text=True)
    tcp = subprocess.Popen([sys.executable, "-c", TCP_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout is not None and tcp.stdout is not None
        sport = json.loads(listener.stdout.readline())["listening"][1]
        tport = int(tcp.stdout.readline())

        def row(name: str, took: float, size: int, unit: str) -> dict[str, object]:
            value = size / took / 1e6 if unit == "MB/s" else size / 64 / took
            out = {"row": name, unit: round(value, 1 if unit == "MB/s" else 0), "seconds": round(took, 3)}
            print(json.dumps(out), flush=True)
            return out

        row("tcp bulk", asyncio.run(tcp_row(tport, bulk, 1 << 16)), len(bulk), "MB/s")
        row("tcp 64 B messages", asyncio.run(tcp_row(tport, msgs, 64)), len(msgs), "msgs/s")
        row("stream 64 B messages", asyncio.run(stream_row(sport, msgs, 64)), len(msgs), "msgs/s")
        row("stream bulk", asyncio.run(stream_row(sport, bulk, 1 << 16)), len(bulk), "MB/s")
        losses = [float(x) for x in opts.loss.split(",")]
        if 0.0 not in losses:
            losses.insert(0, 0.0)
        proxy = subprocess.Popen([sys.executable, "-m", "aqueduct.bench.loss", "proxy", "--target", f"stream={sport}",
                                  "--losses", ",".join(str(x) for x in losses)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert proxy.stdout is not None and proxy.stdin is not None
        pports = json.loads(proxy.stdout.readline())
        base = None
        for loss in losses:
            r = row(f"stream bulk through the proxy, loss {loss:.0%}",
                    asyncio.run(stream_row(pports[f"stream@{loss}"], bulk, 1 << 16)), len(bulk), "MB/s")
            mbps = float(r["MB/s"])  # type: ignore[arg-type]
            base = base or mbps
            print(json.dumps({"row": f"stream goodput ratio at {loss:.0%} loss", "x_lossless": round(mbps / base, 2)}))
        proxy.stdin.close()
        proxy.wait(10)
    finally:
        listener.kill()
        tcp.kill()


if __name__ == "__main__":
    main()

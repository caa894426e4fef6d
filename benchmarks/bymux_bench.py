"""bymux benchmark: one bulk stream's throughput and ping RTT under that load.

    .venv/bin/python benchmarks/bymux_bench.py [--transport tcp|aqueduct-local|aqueduct-quic|all]

For each transport, a client opens a bulk stream and writes `--mib` MiB
through it while a second stream sends `--pings` pings one after another;
the peer reads and discards the bulk data and closes its side when it sees
the end, so the bulk time runs until the last byte was read remotely. TCP
and QUIC peers run in a child process (loopback); `aqueduct-local` runs both
ends in this process over in-process Aqueduct channels. Idle RTT is measured
first on an otherwise quiet connection. Prints one JSON line per transport.
Under load a ping waits behind at most about one credit `--window` of bulk
data per direction, so loaded RTT is roughly window / throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from aeron_compat.bymux import BymuxError, ByteStream, StreamConnection, open_connection
from aeron_compat.bymux.on_aqueduct import accept_on_aqueduct, local_pair, open_on_aqueduct


async def _drain(stream: ByteStream) -> None:
    with contextlib.suppress(BymuxError):
        while await stream.read(1 << 20):
            pass
        await stream.close()


async def serve_connection(conn: StreamConnection) -> None:
    """Drain every stream the client opens; pongs are answered by the protocol itself."""
    tasks = []
    try:
        while True:
            tasks.append(asyncio.create_task(_drain(await conn.accept_stream())))
    except Exception:
        await asyncio.gather(*tasks, return_exceptions=True)


async def _pings(stream: ByteStream, count: int) -> list[float]:
    return [await stream.ping() for _ in range(count)]


async def measure(conn: StreamConnection, mib: int, pings: int) -> dict[str, Any]:
    """Idle RTT, then bulk throughput with concurrent pings on a second stream."""
    quiet = await conn.open_stream()
    idle = await _pings(quiet, pings)
    bulk = await conn.open_stream()
    block = bytes(1 << 20)

    async def send() -> None:
        for _ in range(mib):
            await bulk.write(block)
        await bulk.close()

    start = time.perf_counter()
    sender = asyncio.create_task(send())
    loaded = await _pings(quiet, pings)
    await sender
    assert await bulk.read() == b""  # the peer closed after reading everything
    elapsed = time.perf_counter() - start
    ms = [x * 1e3 for x in loaded]
    return {
        "mib": mib,
        "seconds": round(elapsed, 3),
        "throughput_MBps": round(mib * (1 << 20) / elapsed / 1e6, 1),
        "idle_rtt_ms_p50": round(statistics.median(x * 1e3 for x in idle), 3),
        "loaded_rtt_ms_p50": round(statistics.median(ms), 3),
        "loaded_rtt_ms_p99": round(sorted(ms)[int(len(ms) * 0.99) - 1], 3),
        "loaded_rtt_ms_max": round(max(ms), 3),
    }


@contextlib.contextmanager
def peer_process(server: Callable[..., None], *args: Any) -> Iterator[int]:
    """Run `server(port_queue, *args)` in a child process; yields the port it reports, stops it on exit."""
    ports: Any = multiprocessing.Queue()
    child = multiprocessing.Process(target=server, args=(ports, *args), daemon=True)
    child.start()
    try:
        yield ports.get(timeout=30)
    finally:
        child.terminate()
        child.join()


# ------------------------------------------------------------------ TCP


def _tcp_server(port_queue: Any, window: int) -> None:
    async def main() -> None:
        async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await serve_connection(await open_connection(reader, writer, initiator=False, window=window))

        server = await asyncio.start_server(on_client, "127.0.0.1", 0)
        port_queue.put(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(main())


async def bench_tcp(mib: int, pings: int, window: int) -> dict[str, Any]:
    """bymux over TCP loopback, peer in a child process."""
    with peer_process(_tcp_server, window) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        conn = await open_connection(reader, writer, initiator=True, window=window)
        result = await measure(conn, mib, pings)
        await conn.close()
        return result


# -------------------------------------------------------------- Aqueduct


async def bench_aqueduct_local(mib: int, pings: int, window: int) -> dict[str, Any]:
    """bymux streams on in-process Aqueduct channels, both ends in this process."""
    client, server = await local_pair(window=window)
    serving = asyncio.create_task(serve_connection(server))
    result = await measure(client, mib, pings)
    await client.close()
    await server.close()
    serving.cancel()
    return result


def _quic_server(port_queue: Any, cert: str, key: str, window: int) -> None:
    from aqueduct.api import serve

    async def main() -> None:
        async with serve("127.0.0.1", 0, cert=cert, key=key) as server:
            port_queue.put(server.address[1])
            tasks = set()
            async for conn in server:
                peer = await accept_on_aqueduct(conn.entrypoint, window=window)
                task = asyncio.create_task(serve_connection(peer))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

    asyncio.run(main())


async def bench_aqueduct_quic(mib: int, pings: int, window: int) -> dict[str, Any]:
    """bymux streams on Aqueduct channels over QUIC loopback, peer in a child process."""
    from aqueduct.api import connect
    from aqueduct.quic.certs import make_dev_certs

    scratch = tempfile.TemporaryDirectory()  # (removed when the run returns)
    certs = make_dev_certs(Path(scratch.name))
    with peer_process(_quic_server, str(certs.cert), str(certs.key), window) as port:
        async with connect(f"aqueduct://127.0.0.1:{port}", ca=certs.ca) as aq:
            conn = await open_on_aqueduct(aq.entrypoint, window=window)
            result = await measure(conn, mib, pings)
            await conn.close()
            return result


BENCHES = {"tcp": bench_tcp, "aqueduct-local": bench_aqueduct_local, "aqueduct-quic": bench_aqueduct_quic}
DEFAULT_MIB = {"tcp": 256, "aqueduct-local": 64, "aqueduct-quic": 16}


def main() -> None:
    """Run the chosen benchmarks and print one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=[*BENCHES, "all"], default="all")
    parser.add_argument("--mib", type=int, help="bulk size in MiB (default per transport)")
    parser.add_argument("--pings", type=int, default=200)
    parser.add_argument("--window", type=int, default=256 * 1024, help="per-stream credit window in bytes")
    args = parser.parse_args()
    names = list(BENCHES) if args.transport == "all" else [args.transport]
    for name in names:
        try:
            result = asyncio.run(BENCHES[name](args.mib or DEFAULT_MIB[name], args.pings, args.window))
        except Exception as exc:  # report and go on to the next transport
            result = {"error": repr(exc)}
        print(json.dumps({"transport": name, "window": args.window, **result}), flush=True)


if __name__ == "__main__":
    main()

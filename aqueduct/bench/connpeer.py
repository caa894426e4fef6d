"""The connection benchmark's server process: one kind of server, alone, so its memory is its own.

    python -m aqueduct.bench.connpeer --kind aqueduct|aioquic --cert CERT --key KEY [--single-use-tickets]

Serves the bench protocol (peer.py: PING, ECHO, ...) with Aqueduct (default settings, except connection
limits raised so one address may hold tens of thousands of connections) or with raw aioquic, prints one JSON
line with its port and pid, then answers each line on stdin: `mem` prints {"rss": bytes, "connections": n,
"accepted": m} after a collection (n held now, m accepted since it started: tally.py); end of input ends the
process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import sys
import threading
from dataclasses import replace
from typing import Any

import aqueduct

from ..quic.settings import TransportSettings
from . import aqserver, peer
from .peer import RawServerProtocol, _udp_port, start_raw_server
from .tally import Tally

MAX_CONNECTIONS = 100_000
RAW_IDLE_TIMEOUT = 600.0
"""Raw aioquic has no keep-alive: its idle connections (both ends) last this long, longer than any hold."""


def rss_bytes() -> int:
    """This process's resident set size."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def connection_settings() -> TransportSettings:
    """Aqueduct defaults, with connection limits raised for one address holding many connections."""
    return replace(TransportSettings(), max_connections_per_address=MAX_CONNECTIONS, max_connections=MAX_CONNECTIONS)


def _commands(loop: asyncio.AbstractEventLoop, answer: Any, done: asyncio.Event) -> None:
    for line in sys.stdin:
        if line.strip() == "mem":
            fut = asyncio.run_coroutine_threadsafe(answer(), loop)
            print(json.dumps(fut.result()), flush=True)
    loop.call_soon_threadsafe(done.set)


async def serve_one(kind: str, cert: str, key: str, single_use_tickets: bool = False) -> None:
    """Serve `kind` until stdin ends (Aqueduct with `single_use_tickets`: 0-RTT work runs at once, as in peer.py)."""
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    tally = Tally(keep=False)  # (counts only: a kept connection would count in the memory per connection)
    if kind == "aqueduct":
        async with aqueduct.serve("127.0.0.1", 0, cert=cert, key=key, codec=aqueduct.RawCodec(),
                                  settings=connection_settings(), single_use_tickets=single_use_tickets) as server:
            accept = asyncio.ensure_future(aqserver.accept(server, "raw", tally))

            async def answer() -> dict[str, int]:
                gc.collect()
                return {"rss": rss_bytes(), "connections": len(server.connections), "accepted": tally.accepted}

            print(json.dumps({"port": server.address[1], "pid": os.getpid()}), flush=True)
            threading.Thread(target=_commands, args=(loop, answer, done), daemon=True).start()
            await done.wait()
            accept.cancel()
        return
    peer.TALLY = tally
    raw = await start_raw_server(cert, key, idle_timeout=RAW_IDLE_TIMEOUT)  # tickets as Aqueduct's server

    async def raw_answer() -> dict[str, int]:
        gc.collect()
        return {"rss": rss_bytes(), "connections": len(RawServerProtocol.live), "accepted": tally.accepted}

    print(json.dumps({"port": _udp_port(raw), "pid": os.getpid()}), flush=True)
    threading.Thread(target=_commands, args=(loop, raw_answer, done), daemon=True).start()
    await done.wait()
    raw.close()


def main() -> None:
    """Command-line entry of the connection benchmark's server."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=["aqueduct", "aioquic"], required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--single-use-tickets", action="store_true")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_one(args.kind, args.cert, args.key, args.single_use_tickets))


if __name__ == "__main__":
    main()

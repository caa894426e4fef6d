"""A typed echo server process for the red-team suite: what `aqueduct serve --echo` is, with a schema.

`aqueduct serve` has only the raw echo service, which announces no schema and so never reads a peer's
`schema` header; the schema attacks need a server that does. Run as a script by live.live_server(typed=True):
it serves `entrypoint=Ping` (CBOR) on 127.0.0.1, port 0, with a metrics endpoint, takes the same
`--limit NAME=VALUE` options (cli/serve.py's parser), prints the two lines `aqueduct serve` prints
(`listening on ...`, `metrics on ...`) and answers every Ping by sending its `data` back on its `reply`.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import msgspec

import aqueduct
from aqueduct.cli.serve import limits


class Ping(msgspec.Struct):
    """The typed echo request: bytes and where to send them back."""

    data: bytes
    reply: aqueduct.Sender[bytes]


async def serve_connection(conn: aqueduct.Connection[Any]) -> None:
    async for ping in conn.entrypoint:
        async with ping.reply as reply:
            await reply.send(ping.data)


async def main(args: argparse.Namespace) -> None:
    engine_config, settings = limits(args.limit)
    async with aqueduct.serve("127.0.0.1", 0, cert=args.cert, key=args.key, entrypoint=Ping,
                              metrics=("127.0.0.1", 0), engine_config=engine_config, settings=settings) as server:
        assert server.metrics_address is not None
        print(f"listening on {server.address[0]}:{server.address[1]}", flush=True)
        print(f"metrics on http://{server.metrics_address[0]}:{server.metrics_address[1]}/metrics", flush=True)
        tasks: set[asyncio.Task[None]] = set()
        async for conn in server:
            task = asyncio.ensure_future(serve_connection(conn))
            tasks.add(task)
            task.add_done_callback(tasks.discard)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--limit", action="append", default=[])
    asyncio.run(main(parser.parse_args()))

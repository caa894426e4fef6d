"""Run one transport's workloads in a separate measuring process (the tuned rows: their own event loop).

    python -m aqueduct.bench.remote --port P --ca CA --transport NAME --window S [--uvloop]

Prints one JSON object {workload: value}. The tuned Aqueduct rows use it so
they can run on uvloop against a uvloop peer while the reference rows keep
stdlib asyncio in the main process, all in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path


async def _run(args: argparse.Namespace) -> dict[str, float]:
    from .runner import BY_NAME, Options, _make_client, _measure

    transport = BY_NAME[args.transport]
    out: dict[str, float] = {}
    client = _make_client(transport, {"aqueduct-tuned": args.port}, Path(args.ca))
    await client.open()
    try:
        await _measure(client, transport, Options(window=args.window), out.__setitem__)
    finally:
        await client.close()
    return out


def main() -> None:
    """Command-line entry."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--transport", required=True)
    parser.add_argument("--window", type=float, required=True)
    parser.add_argument("--uvloop", action="store_true")
    args = parser.parse_args()
    if args.uvloop:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    print(json.dumps(asyncio.run(_run(args))))


if __name__ == "__main__":
    main()

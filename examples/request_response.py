"""Request/response: a tiny RPC where each call gets its own reply channel and errors travel back too."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from _common import running_server

import aqueduct

METHODS: dict[str, Callable[..., Any]] = {"add": lambda a, b: a + b, "upper": lambda s: s.upper()}


async def rpc_server(conn: aqueduct.Connection[aqueduct.Receiver[Any]]) -> None:
    async for call in conn.entrypoint:
        async with call["reply"] as reply:
            try:
                await reply.send({"ok": METHODS[call["method"]](*call["args"])})
            except Exception as exc:
                await reply.send({"error": f"{type(exc).__name__}: {exc}"})


async def call(conn: aqueduct.Connection[aqueduct.Sender[Any]], method: str, *args: Any) -> Any:
    reply_tx, reply_rx = aqueduct.channel()
    await conn.entrypoint.send({"method": method, "args": list(args), "reply": reply_tx})
    answer = await reply_rx.recv()
    if "error" in answer:
        raise RuntimeError(answer["error"])
    return answer["ok"]


async def main() -> None:
    async with running_server(rpc_server) as (url, certs), aqueduct.connect(url, ca=certs.ca) as conn:
        results = await asyncio.gather(call(conn, "add", 2, 40), call(conn, "upper", "quic"))
        print("add(2, 40) =", results[0])
        print("upper('quic') =", results[1])
        try:
            await call(conn, "divide", 1, 0)
        except RuntimeError as exc:
            print("divide failed as expected:", exc)


if __name__ == "__main__":
    aqueduct.run(main())  # Ctrl-C ends it with one line

"""Echo with reply channels: every request carries the channel its answer should go to."""

from __future__ import annotations

from typing import Any

from _common import running_server

import aqueduct


async def echo(conn: aqueduct.Connection[aqueduct.Receiver[Any]]) -> None:
    async for request in conn.entrypoint:
        async with request["reply"] as reply:  # the reply Sender arrived inside the message
            await reply.send({"echo": request["text"]})


async def main() -> None:
    async with running_server(echo) as (url, certs), aqueduct.connect(url, ca=certs.ca) as conn:
        for text in ("hello", "aqueduct", "bye"):
            reply_tx, reply_rx = aqueduct.channel()
            await conn.entrypoint.send({"text": text, "reply": reply_tx})
            print("echoed:", (await reply_rx.recv())["echo"])


if __name__ == "__main__":
    aqueduct.run(main())  # Ctrl-C ends it with one line

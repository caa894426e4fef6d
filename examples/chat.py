"""A chat server where each client gets its own channel tree.

A client joins by sending its name and an `inbox` Sender. The server answers
on that inbox with a welcome carrying a fresh `say` Sender: the client's
own channel for posting. Everything said is broadcast to every inbox;
finishing `say` leaves the room.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from _common import running_server

import aqueduct

inboxes: dict[str, aqueduct.Sender[Any]] = {}


async def broadcast(text: str) -> None:
    for inbox in list(inboxes.values()):
        await inbox.send({"line": text})


async def member(name: str, say_rx: aqueduct.Receiver[Any]) -> None:
    await broadcast(f"* {name} joined")
    async for line in say_rx:
        await broadcast(f"<{name}> {line}")
    inbox = inboxes.pop(name)
    await broadcast(f"* {name} left")
    await inbox.finish()


async def chat_server(conn: aqueduct.Connection[aqueduct.Receiver[Any]]) -> None:
    tasks = []
    async for join in conn.entrypoint:
        say_tx, say_rx = aqueduct.channel()
        inboxes[join["name"]] = join["inbox"]
        await join["inbox"].send({"welcome": join["name"], "say": say_tx})  # a channel tree per client
        tasks.append(asyncio.ensure_future(member(join["name"], say_rx)))
    await asyncio.gather(*tasks)


async def client(url: str, ca: str | Path, name: str, lines: list[str], ready: asyncio.Barrier) -> list[str]:
    async with aqueduct.connect(url, ca=ca) as conn:
        inbox_tx, inbox_rx = aqueduct.channel()
        await conn.entrypoint.send({"name": name, "inbox": inbox_tx})
        welcome = await inbox_rx.recv()
        say: aqueduct.Sender[Any] = welcome["say"]
        await ready.wait()
        seen: list[str] = []
        async with say:
            for line in lines:
                await say.send(line)
            while not any(s == f"<{name}> {lines[-1]}" for s in seen):
                seen.append((await inbox_rx.recv())["line"])
        async for msg in inbox_rx:  # the server finishes our inbox after we left
            seen.append(msg["line"])
        return seen


async def main() -> None:
    async with running_server(chat_server) as (url, certs):
        ready = asyncio.Barrier(2)
        ann, ben = await asyncio.gather(
            client(url, certs.ca, "ann", ["hi all", "bye"], ready),
            client(url, certs.ca, "ben", ["hello ann"], ready),
        )
        print("ann saw:", *ann, sep="\n  ")
        print("ben saw:", *ben, sep="\n  ")
        assert "<ben> hello ann" in ann and "<ann> hi all" in ben


if __name__ == "__main__":
    aqueduct.run(main())  # Ctrl-C ends it with one line

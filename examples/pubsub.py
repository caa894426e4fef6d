"""Publish/subscribe fan-out built from channels in messages.

A subscriber sends the server a Sender for its feed; a publisher sends
messages; the server copies each one to every feed of that topic. When the
publisher finishes, the server finishes every feed.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path
from typing import Any

from _common import running_server

import aqueduct

feeds: dict[str, list[aqueduct.Sender[Any]]] = defaultdict(list)
subscribed = asyncio.Event()


async def broker(conn: aqueduct.Connection[aqueduct.Receiver[Any]]) -> None:
    async for msg in conn.entrypoint:
        if "subscribe" in msg:
            feeds[msg["subscribe"]].append(msg["feed"])
            if len(feeds["news"]) == 2:
                subscribed.set()
        elif "publish" in msg:
            for feed in feeds[msg["publish"]]:
                await feed.send(msg["data"])
        elif "close" in msg:
            for feed in feeds.pop(msg["close"], []):
                await feed.finish()


async def subscriber(url: str, ca: str | Path, name: str) -> list[str]:
    async with aqueduct.connect(url, ca=ca) as conn:
        feed_tx, feed_rx = aqueduct.channel()
        await conn.entrypoint.send({"subscribe": "news", "feed": feed_tx})
        got = [item async for item in feed_rx]
        print(f"{name} got {got}")
        return got


async def main() -> None:
    async with running_server(broker) as (url, certs):
        subs = [asyncio.ensure_future(subscriber(url, certs.ca, n)) for n in ("alice", "bob")]
        async with aqueduct.connect(url, ca=certs.ca) as publisher:
            await asyncio.wait_for(subscribed.wait(), 10)
            for headline in ("quic is fast", "channels travel in messages", "fan-out works"):
                await publisher.entrypoint.send({"publish": "news", "data": headline})
            await publisher.entrypoint.send({"close": "news"})
            results = await asyncio.gather(*subs)
        assert results[0] == results[1] == ["quic is fast", "channels travel in messages", "fan-out works"]
        print("both subscribers saw every headline")


if __name__ == "__main__":
    aqueduct.run(main())  # Ctrl-C ends it with one line

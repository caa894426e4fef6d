"""A test publisher on its own event-loop thread: serves `subscribe` (resumable from a count) and `publish`."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import aqueduct
from aqueduct.quic.certs import DevCerts


class Publisher:
    """Topics are lists of messages; subscribers get them from `from` on, then whatever is added later."""

    def __init__(self, certs: DevCerts) -> None:
        self.certs = certs
        self.topics: dict[str, list[Any]] = {}
        self.published: list[tuple[int, dict[str, Any]]] = []
        """Applied rows, (batch id, row): a batch is applied whole once its rows channel finished."""
        self.applied: set[tuple[str, str, int]] = set()
        """(sink, topic, batch id) of every applied batch: a repeat is drained and not applied."""
        self.repeats = 0
        self.hold_replies = False
        """Hold commit replies until `release` (a test kills the sink between the commit and its ledger note)."""
        self.replies_held = threading.Event()
        self.release = threading.Event()
        self.held_batch: int | None = None
        self.subscriptions = 0
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._more: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self) -> Publisher:
        self._thread.start()
        started: Future[str] = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        self.url = started.result(timeout=20)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._serving.result(timeout=20)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=20)

    def add(self, topic: str, messages: list[Any]) -> None:
        """Append messages to a topic (thread-safe); subscribers get them."""

        def add() -> None:
            self.topics.setdefault(topic, []).extend(messages)
            assert self._more is not None
            self._more.set()
            self._more = asyncio.Event()

        self._loop.call_soon_threadsafe(add)

    async def _start(self) -> str:
        self._more, self._stop = asyncio.Event(), asyncio.Event()
        ready: asyncio.Future[str] = self._loop.create_future()
        self._serving = asyncio.run_coroutine_threadsafe(self._serve(ready), self._loop)
        return await ready

    async def _serve(self, ready: asyncio.Future[str]) -> None:
        tasks: set[asyncio.Task[None]] = set()
        async with aqueduct.serve("127.0.0.1", 0, cert=self.certs.cert, key=self.certs.key) as server:
            host, port = server.address
            ready.set_result(f"aqueduct://{host}:{port}")

            async def accept() -> None:
                async for conn in server:
                    tasks.add(asyncio.ensure_future(self._connection(conn, tasks)))

            acceptor = asyncio.ensure_future(accept())
            assert self._stop is not None
            await self._stop.wait()
            acceptor.cancel()
            for t in tasks:
                t.cancel()

    async def _connection(self, conn: aqueduct.Connection, tasks: set[asyncio.Task[None]]) -> None:
        try:
            async for req in conn.entrypoint:
                tasks.add(asyncio.ensure_future(self._request(req)))
        except aqueduct.ConnectionLost:
            pass

    async def _request(self, req: dict[str, Any]) -> None:
        try:
            if req["op"] == "subscribe":
                self.subscriptions += 1
                await self._subscribe(req["topic"], req["from"], req["updates"])
            elif req["op"] == "publish":
                await self._publish(req)
        except aqueduct.AqueductError:
            pass

    async def _publish(self, req: dict[str, Any]) -> None:
        """The idempotent commit: rows are applied only when their channel finished, and a batch only once."""
        rows = [row async for row in req["rows"]]  # a crash mid-batch raises here: nothing applied
        key = (req["sink"], req["topic"], req["batch_id"])
        applied = key not in self.applied
        if applied:
            self.applied.add(key)
            self.published.extend((req["batch_id"], row) for row in rows)
        else:
            self.repeats += 1
        if self.hold_replies and rows and not self.release.is_set():
            self.held_batch = req["batch_id"]
            self.replies_held.set()
            await asyncio.to_thread(self.release.wait, 120)
        async with req["done"] as done:
            await done.send({"batch_id": req["batch_id"], "applied": applied})

    async def _subscribe(self, topic: str, start: int, tx: aqueduct.Sender) -> None:
        i = start
        while True:
            messages = self.topics.get(topic, [])
            while i < len(messages):
                await tx.send(messages[i])
                i += 1
            assert self._more is not None
            await self._more.wait()

    def rows(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """A snapshot of what was published."""
        return iter(list(self.published))

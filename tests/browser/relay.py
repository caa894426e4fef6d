"""The Aqueduct client engine, with Chromium's WebTransport as its transport (page/relay.html moves the bytes).

`BrowserRelay` is an adapter (api/adapter.py's `Adapter`) for a `ConnectionLink`: the engine's commands become
operations the page runs on its session (open a stream and write, reset, STOP_SENDING, a datagram, close), in
order, one `page.evaluate` per batch; what the page reads comes back through functions it calls
(`pyData`, `pyReset`, `pyDatagram`, `pyClosed`) and is fed to the engine. The page uses nothing but the
WebTransport API with `serverCertificateHashes`, so every byte between the engine and the server crosses
Chromium's QUIC, HTTP/3 and WebTransport stack. Flow control is the browser's (credit grants are not relayed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aqueduct.api.codec import DEFAULT_CODEC, Codec
from aqueduct.api.connection import Connection
from aqueduct.api.endpoints import _headers
from aqueduct.api.link import ConnectionLink
from aqueduct.api.schema import canonical
from aqueduct.core import transport as tp
from aqueduct.core.config import EngineConfig
from aqueduct.core.engine import Engine
from aqueduct.wire.channel_id import Side


class BrowserRelay:
    """One client engine whose transport is a WebTransport session in a Chromium page."""

    def __init__(self, page: Any) -> None:
        self._page = page
        self._loop = asyncio.get_running_loop()
        self.engine: Engine | None = None
        self.listener: Callable[[list[Any]], None] | None = None
        self.side = Side.CLIENT
        self.terminated: asyncio.Future[tp.ConnectionTerminated] = self._loop.create_future()
        self.datagram_payload_limit = 0
        self.closed_with: tuple[int, str] | None = None
        self._ops: list[list[Any]] = []
        self._draining: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._pumping = False

    async def expose(self) -> None:
        """Give the page the functions it reports through (before it loads)."""
        await self._page.expose_function("pyData", self._data)
        await self._page.expose_function("pyReset", self._reset)
        await self._page.expose_function("pyDatagram", self._datagram)
        await self._page.expose_function("pyClosed", self._closed)

    async def open(self, url: str, cert_hash: str, headers: list[tuple[str, bytes]]) -> None:
        """Open the page's session, then start the engine on it."""
        limit = await self._page.evaluate("([u, h]) => openSession(u, h)", [url, cert_hash])
        self.datagram_payload_limit = int(limit)
        now = self._loop.time()
        self.engine = Engine(Side.CLIENT, headers=headers, config=EngineConfig(max_datagram_payload=int(limit)),
                             now=now)
        self.engine.handle_event(tp.HandshakeCompleted(), now)
        self.flush()

    # ---- the Adapter ----
    def send_blocked(self, stream_id: int | None) -> bool:
        return len(self._ops) > 1024

    def new_stream_blocked(self) -> bool:
        return len(self._ops) > 1024

    def flush(self) -> None:
        if self._pumping or self.engine is None:
            return
        self._pumping = True
        try:
            engine = self.engine
            for cmd in engine.commands():
                self._op(cmd)
            events = engine.events()
            if events and self.listener is not None:
                self.listener(events)
            for cmd in engine.commands():
                self._op(cmd)
            self._arm(engine.next_deadline())
        finally:
            self._pumping = False
        if self._ops and (self._draining is None or self._draining.done()):
            self._draining = asyncio.ensure_future(self._drain())

    flush_if_any = flush
    flush_soon = flush

    async def wait_while(self, blocked: Callable[[], bool]) -> None:
        while blocked():
            if self.terminated.done():
                from aqueduct.errors import ConnectionLost

                raise ConnectionLost("connection lost while waiting to send")
            await asyncio.sleep(0.005)  # (the relay's own queue: the page drains it)

    # ---- commands to the page ----
    def _op(self, cmd: tp.TransportCommand) -> None:
        if isinstance(cmd, tp.SendStreamData):
            self._ops.append(["w", cmd.stream_id, cmd.data.hex(), cmd.end_stream])
        elif isinstance(cmd, tp.SendDatagram):
            self._ops.append(["d", 0, cmd.data.hex(), None])
        elif isinstance(cmd, tp.ResetStream):
            self._ops.append(["r", cmd.stream_id, int(cmd.error_code), None])
        elif isinstance(cmd, tp.StopSending):
            self._ops.append(["s", cmd.stream_id, int(cmd.error_code), None])
        elif isinstance(cmd, tp.CloseConnection):
            self._ops.append(["c", 0, int(cmd.error_code), cmd.reason])

    async def _drain(self) -> None:
        while self._ops:
            batch, self._ops = self._ops, []
            await self._page.evaluate("(list) => ops(list)", batch)

    def _arm(self, deadline: float | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if deadline is not None and not self.terminated.done():
            self._timer = self._loop.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self.engine is not None:
            self.engine.handle_timer(self._loop.time())
            self.flush()

    # ---- events from the page ----
    def _feed(self, event: tp.TransportEvent) -> None:
        if self.engine is not None and not self.terminated.done():
            self.engine.handle_event(event, self._loop.time())
            self.flush()

    def _data(self, key: int, data: str, fin: bool) -> None:
        self._feed(tp.StreamDataReceived(key, bytes.fromhex(data), fin))

    def _reset(self, key: int, code: int) -> None:
        self._feed(tp.StreamReset(key, code))

    def _datagram(self, data: str) -> None:
        self._feed(tp.DatagramReceived(bytes.fromhex(data)))

    def _closed(self, code: int, reason: str) -> None:
        self.closed_with = (code, reason)
        self._feed(tp.ConnectionTerminated(code, reason, True))
        if not self.terminated.done():
            self.terminated.set_result(tp.ConnectionTerminated(code, reason, True))


async def open_in_browser(relay: BrowserRelay, url: str, cert_hash: str, *, codec: Codec = DEFAULT_CODEC,
                          entrypoint: Any = None) -> Connection[Any]:
    """An Aqueduct connection whose every byte crosses the relay page's WebTransport session (the page exposed
    the relay's functions, `BrowserRelay.expose`, before it loaded)."""
    schema = canonical(entrypoint) if entrypoint is not None else None
    await relay.open(url, cert_hash, _headers(None, codec, schema))
    link: ConnectionLink[Any] = ConnectionLink(relay, codec, entrypoint, schema)
    relay.flush()
    await asyncio.wait_for(link.ready, 20)
    return Connection(link)  # type: ignore[arg-type]

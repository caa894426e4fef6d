"""The glue between an API connection's link and a `ConnectionTap` (what `record=` switches on).

`record_connection(link, target)` sets `link.recording` (api/link.py); the link then calls
`on_events` with every batch of engine application events,
`on_sent` after each engine send and `on_received` for each message taken.
Handles become channel ids through a cache filled as halves are seen, with
a fall-back look-up in the engine's half tables (a read-only peek at the
engine's internals: the engine has no public handle-to-channel call). A
loop timer samples the QUIC connection's stats every `stats_seconds`.
The engine reports no end for a half the application has dropped, so
`on_dropped` (called by the link as it hands a drop to the engine)
keeps each dropped, not yet ended half and records its end once the
engine's state shows it (swept after the drop, on each event batch, each
stats sample and at close). A
recorder created here from a path is closed (on a thread) when the
connection ends; a Recorder passed in belongs to the caller.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, Any

from ..core.app import AppEvent, Delivered, Delivery, SendResult
from ..quic import introspect
from ..quic.introspect import QuicStatsProbe
from .recorder import Recorder

if TYPE_CHECKING:
    from ..api.connection import QuicLink

log = logging.getLogger(__name__)


def _peer(conn: QuicLink) -> str:
    addr = conn.protocol.peer_address
    return f"{addr[0]}:{addr[1]}" if addr is not None else ""


def _link(conn: QuicLink) -> str | None:
    """What both sides of a QUIC connection know alike: the original destination connection id (chosen by the
    client, kept by the server through a retry), as hex. A guarded read of aioquic's connection."""
    cid = introspect.original_destination_cid(conn.protocol.quic)
    return cid.hex() if cid is not None else None


class ConnectionRecording:
    """Records one API connection through a tap of `recorder`."""

    def __init__(self, conn: QuicLink, recorder: Recorder, *, owns_recorder: bool = False,
                 stats_seconds: float = 1.0) -> None:  # fmt: skip
        """Attach to `conn` (sets `conn.recording`) and start the stats timer."""
        self.recorder = recorder
        self.owns_recorder = owns_recorder
        self.tap = recorder.connection(conn.protocol.side.name.lower(), _peer(conn), link=_link(conn))
        self.stats_seconds = stats_seconds
        self._conn = conn
        self._channels: dict[int, int] = {}
        self._probe = QuicStatsProbe(conn.protocol.quic)
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = self._loop.call_later(stats_seconds, self._sample)
        self._dropped: list[tuple[Any, int, bool]] = []
        """(engine half, channel, outgoing) of dropped halves whose end is not recorded yet."""
        conn.closed.add_done_callback(self._on_closed)
        conn.recording = self

    def channel_of(self, handle: int) -> int | None:
        """The channel id of an engine handle, if known."""
        channel = self._channels.get(handle)
        if channel is None:
            engine: Any = self._conn.protocol.engine
            half = engine._senders.get(handle) or engine._receivers.get(handle) if engine is not None else None
            if half is None:
                return None
            channel = self._channels[handle] = int(half.channel)
        return channel

    def _is_sender(self, handle: int) -> bool:
        engine: Any = self._conn.protocol.engine
        return engine is not None and handle in engine._senders

    # ---- called by Connection ----
    def on_events(self, events: list[AppEvent]) -> None:
        """A batch of engine application events."""
        app_event, channel_of = self.tap.app_event, self.channel_of
        for ev in events:
            app_event(ev, channel_of)
        if self._dropped:
            self._sweep_dropped()

    def on_dropped(self, handle: int, receiver: bool) -> None:
        """The application dropped a half (called before the engine hears of it, which then reports no end)."""
        engine: Any = self._conn.protocol.engine
        if engine is None:
            return
        half = (engine._receivers if receiver else engine._senders).get(handle)
        if half is None or half.end_reason is not None:  # unknown, or ended already (its event was recorded)
            return
        channel = self.channel_of(handle)
        if channel is not None:
            if not self._dropped:
                self._loop.call_soon(self._sweep_dropped)  # (a drop that ends the half at once)
            self._dropped.append((half, channel, not receiver))

    def _sweep_dropped(self) -> None:
        still = []
        for half, channel, outgoing in self._dropped:
            if half.end_reason is not None:
                self.tap.ended(channel, outgoing, half.end_reason)
            else:
                still.append((half, channel, outgoing))
        self._dropped = still

    def on_sent(self, handle: int, payload: bytes, delivery: Delivery, result: SendResult) -> None:
        """The engine accepted a message on sender `handle`."""
        channel = self.channel_of(handle)
        if channel is None:
            return
        attached: tuple[int, ...] = ()
        if result.created:
            ids = []
            for created in result.created:
                child = self.channel_of(created)
                if child is not None:
                    ids.append(child)
                    self.tap.created(child, outgoing=self._is_sender(created), parent=channel)
            attached = tuple(ids)
        self.tap.sent(channel, result.number, delivery, payload, attached)

    def on_received(self, delivered: Delivered) -> None:
        """The application took a message."""
        attached: tuple[int, ...] = ()
        if delivered.attachments:
            for a in delivered.attachments:
                self._channels[a.handle] = a.channel
                self.tap.created(a.channel, outgoing=a.is_sender, parent=delivered.channel)
            attached = tuple(a.channel for a in delivered.attachments)
        self.tap.received(delivered.channel, delivered.number, delivered.delivery, delivered.payload, attached)

    # ---- stats and closing ----
    def _sample(self) -> None:
        self._sweep_dropped()
        self.tap.stats(*self._probe.sample())
        self._timer = self._loop.call_later(self.stats_seconds, self._sample)

    def _on_closed(self, _fut: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._sweep_dropped()
        self.tap.stats(*self._probe.sample())
        if self.owns_recorder:
            self._loop.run_in_executor(None, self._close_recorder)

    def _close_recorder(self) -> None:
        try:
            self.recorder.close()
        except RuntimeError:  # a failed writer thread: already logged by the recorder; the connection is over
            log.warning("recording of connection %s is incomplete", self.tap.id)


def open_recorder(target: str | os.PathLike[str] | Recorder) -> tuple[Recorder, bool]:
    """A Recorder for `record=`: the one given, or a new one on a directory (then owned by the caller)."""
    if isinstance(target, Recorder):
        return target, False
    return Recorder(target), True


def record_connection(conn: QuicLink, target: str | os.PathLike[str] | Recorder) -> ConnectionRecording:
    """Start recording `conn` into `target` (a directory or a Recorder)."""
    recorder, owned = open_recorder(target)
    return ConnectionRecording(conn, recorder, owns_recorder=owned)

"""Dropped halves: a Sender or Receiver the application let go of tells the engine, from the event loop.

A half is dropped from its `__del__` (halves/), which may run inside any
code, even the engine's, or on another thread; so a drop is only queued
here (`defer`) and told to the engine by one callback on the loop (`run`),
which takes every drop queued before it runs: one engine call per half,
one flush per batch, which transmits only if the drops wrote something
(`flush_if_any`). Only another thread needs call_soon_threadsafe (its
self-pipe write wakes the loop). The flag is cleared before the batch is
taken, so a drop queued meanwhile schedules another (at worst empty) batch,
never none. The recording hears of a drop before the engine (the engine
reports no end for a dropped half); a dropped receiver's prefetched
messages are discarded as the engine discards its queue.

Drops owns the queue and the flag; the link (link.py) lends itself through
DropHost.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from ..core import app
from ..errors import ChannelError
from .adapter import Adapter
from .hooks import Recording
from .prefetch import Prefetch

if TYPE_CHECKING:
    from ..core.engine import Engine


class DropHost(Protocol):
    """What dropping needs of its connection (link.py's ConnectionLink is one)."""

    closed: asyncio.Future[app.ConnectionClosed]
    recording: Recording | None

    @property
    def engine(self) -> Engine:
        """The engine."""

    @property
    def protocol(self) -> Adapter:
        """The QUIC adapter."""


class Drops:
    """The drops of one connection's halves not yet told to the engine."""

    def __init__(self, host: DropHost, prefetch: Prefetch, loop: asyncio.AbstractEventLoop) -> None:
        self._host = host
        self._prefetch = prefetch
        self._loop = loop
        self.queue: list[tuple[int, bool]] = []
        """Handles of collected halves (and whether each is a receiver) not yet told to the engine (a list: an
        empty deque costs ~600 B per connection; `run` takes the whole batch at once)."""
        self.scheduled = False
        """A `run` is scheduled on the loop."""

    def defer(self, handle: int, receiver: bool) -> None:
        """Queue a drop for the loop (see the module docstring)."""
        self.queue.append((handle, receiver))
        if self.scheduled:
            return
        self.scheduled = True
        loop = self._loop
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # (no loop runs here: another thread, or a collection after the loop stopped)
            running = None
        try:
            if running is loop:
                loop.call_soon(self.run)
            else:
                loop.call_soon_threadsafe(self.run)
        except RuntimeError:  # the loop is closed: nothing left to tell
            pass

    def run(self) -> None:
        """Tell the engine every drop queued so far."""
        self.scheduled = False
        drops, self.queue = self.queue, []
        host = self._host
        if host.closed.done():
            return
        engine, now = host.engine, self._loop.time()
        recording = host.recording
        for handle, receiver in drops:
            if recording is not None:
                recording.on_dropped(handle, receiver)  # (the engine reports no end for a dropped half)
            try:
                if receiver:
                    self._prefetch.forget(handle, discard=True)
                    engine.drop_receiver(handle, now=now)
                else:
                    engine.drop_sender(handle, now=now)
            except ChannelError:
                pass
        host.protocol.flush_if_any()

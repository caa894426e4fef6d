# The loop thread shared by every driver of the process that has no asyncio loop of its own:
# one extra thread however many clients a sync program opens (fewer threads fighting over the
# GIL), started by the first such driver and stopped when the last one closes.
"""A reference-counted daemon thread running one asyncio loop."""

from __future__ import annotations

import asyncio
import threading


class LoopThread:
    """An asyncio loop running forever on a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.refs = 0
        started = threading.Event()
        self.ident = 0

        def run() -> None:
            self.ident = threading.get_ident()
            self.loop.call_soon(started.set)
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, name="aeron-driver-loop", daemon=True)
        self.thread.start()
        started.wait()


_shared: LoopThread | None = None
_lock = threading.Lock()


def acquire() -> LoopThread:
    """The shared loop thread (started if needed), with one more user."""
    global _shared
    with _lock:
        if _shared is None:
            _shared = LoopThread()
        _shared.refs += 1
        return _shared


def release(owner: LoopThread) -> None:
    """One user fewer; the last one stops the loop and its thread."""
    global _shared
    with _lock:
        owner.refs -= 1
        if owner.refs > 0:
            return
        if _shared is owner:
            _shared = None
    owner.loop.call_soon_threadsafe(owner.loop.stop)
    owner.thread.join(timeout=10)
    owner.loop.close()

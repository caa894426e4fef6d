"""A wake-everyone signal for asyncio waiters that re-check their own condition.

`fire()` wakes all current waiters at once (set, then clear, an Event);
`wait_for(ready)` returns as soon as `ready()` holds, re-checking after
every pulse, so a waiter never misses a change made before it slept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Pulse:
    """Wakes every current waiter; waiters re-check their own condition."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def fire(self) -> None:
        """Wake all waiters."""
        self._event.set()
        self._event.clear()

    async def wait_for(self, ready: Callable[[], bool]) -> None:
        """Return once `ready()` is true."""
        while not ready():
            await self._event.wait()

# A link is one connection between two drivers, used both ways: control messages are queued by `send_ctl`
# and written in order by one task of the transport's; incoming ones go to the `on_control` callback the
# network gave (a callback, so a link knows nothing of the network that owns it).  `ControlLink` is the
# part every transport shares; aqueduct_link.py and marlin_link.py are the two links there are.
"""`ControlLink`: one connection between two drivers, whatever the transport."""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Callable
from typing import Any

_link_ids = itertools.count(1)

OnControl = Callable[["ControlLink", dict[str, Any]], None]
"""The network's dispatcher for a link's incoming control messages."""


class ControlLink:
    """One connection between two drivers, with an ordered control channel each way (any transport).

    Control messages are queued by `send_ctl` and written in order by the transport's writer task;
    incoming ones go to `on_control`.
    """

    def __init__(self, on_control: OnControl, peer: str, endpoint: str | None = None,
                 listener: str | None = None) -> None:
        self.id = next(_link_ids)
        self.on_control = on_control  # the network's dispatcher for incoming control messages
        self.peer = peer
        self.endpoint, self.listener = endpoint, listener
        self._queue: deque[dict[str, Any]] = deque()
        self._wake = asyncio.Event()
        self.alive = True

    @property
    def datagram_limit(self) -> int:
        """Largest unreliable message on this connection."""
        return 1200

    def send_ctl(self, msg: dict[str, Any]) -> None:
        """Queue a control message (loop)."""
        self._queue.append(msg)
        self._wake.set()

    async def run(self) -> None:
        """Write queued control messages and dispatch incoming ones until the connection ends."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the connection."""
        raise NotImplementedError

"""Per-message outcomes: the futures `send(..., confirm=True)` returns, settled by the engine's reports.

Each confirmed message is keyed by its sender handle and (reliable, number)
(the two number spaces of a channel). `MessagesAcked`/`MessagesNacked`
runs settle the futures they cover (ACKED/NACKED); a sender's end settles
every future it still has (OUTCOME_FOR_END: e.g. CANCELLED, LOST); a
connection's end settles all with CONNECTION_LOST. A message confirmed on a
sender that already ended is settled at once. The engine reports every
number exactly once, so each future is set once.
"""

from __future__ import annotations

import asyncio

from ..core import app
from ..errors import OUTCOME_FOR_END, EndReason, Outcome


class Outcomes:
    """The outcome futures of one connection's confirmed messages."""

    __slots__ = ("_loop", "_pending")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._pending: dict[int, dict[tuple[bool, int], asyncio.Future[Outcome]]] = {}

    def __bool__(self) -> bool:
        return bool(self._pending)

    def __contains__(self, handle: int) -> bool:
        return handle in self._pending

    def confirm(self, handle: int, reliable: bool, number: int, ended: EndReason | None) -> asyncio.Future[Outcome]:
        """The future of message `number` of sender `handle` (settled now if the sender `ended`)."""
        fut: asyncio.Future[Outcome] = self._loop.create_future()
        if ended is not None:
            fut.set_result(OUTCOME_FOR_END[ended])
        else:
            self._pending.setdefault(handle, {})[(reliable, number)] = fut
        return fut

    def settle_run(self, ev: app.MessagesAcked | app.MessagesNacked) -> None:
        """A run of a sender's messages was acked or nacked."""
        pending = self._pending.get(ev.sender)
        if not pending:
            return
        outcome = Outcome.ACKED if isinstance(ev, app.MessagesAcked) else Outcome.NACKED
        for key in [k for k in pending if k[0] == ev.reliable and ev.first <= k[1] < ev.stop]:
            fut = pending.pop(key)
            if not fut.done():
                fut.set_result(outcome)
        if not pending:
            del self._pending[ev.sender]

    def settle_all(self, handle: int, outcome: Outcome) -> None:
        """Every message of sender `handle` still unanswered ends with `outcome`."""
        for fut in self._pending.pop(handle, {}).values():
            if not fut.done():
                fut.set_result(outcome)

    def settle_every(self, outcome: Outcome) -> None:
        """Every message of every sender still unanswered ends with `outcome` (the connection ended)."""
        for handle in list(self._pending):
            self.settle_all(handle, outcome)

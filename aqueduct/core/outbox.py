"""The engine's outputs: transport commands and application events, in the order they were made.

Every part of the engine emits here and nowhere else; the engine facade
drains both lists (`take_commands`, `take_events`). Writes are not joined
here: a send is one write (a batch of messages, one SendStreamData), and
joining a loop turn's writes to one stream is the adapter's
(quic/writes.py). One kind of command is merged on its way in: a
GrantCredit right after another one for the same stream (takes in a row
from one stream: one grant).

Spec: none (engine plumbing; frame placement is the spec's "Frames", done by the parts).
"""

from __future__ import annotations

from collections.abc import Callable

from .app import AppEvent
from .transport import GrantCredit, TransportCommand


class Outbox:
    """Commands and events waiting to be drained."""

    __slots__ = ("_commands", "_events", "command", "event")

    def __init__(self) -> None:
        self._commands: list[TransportCommand] = []
        self._events: list[AppEvent] = []
        self.command: Callable[[TransportCommand], None] = self._commands.append
        """Emit a transport command (the list's own append: no Python frame per command; the lists stay)."""
        self.event: Callable[[AppEvent], None] = self._events.append
        """Emit an application event."""

    def grant_credit(self, stream_id: int, nbytes: int) -> None:
        """Emit GrantCredit, merged into a GrantCredit for the same stream just before it."""
        cmds = self._commands
        if cmds:
            last = cmds[-1]
            if type(last) is GrantCredit and last.stream_id == stream_id:
                last.nbytes += nbytes  # (not drained yet: take_commands hands out a copy of the list)
                return
        cmds.append(GrantCredit(stream_id, nbytes))

    def take_commands(self) -> list[TransportCommand]:
        """Drain the commands, in order."""
        cmds = self._commands
        if not cmds:
            return []
        out = cmds.copy()
        cmds.clear()
        return out

    def take_events(self) -> list[AppEvent]:
        """Drain the events, in order."""
        evs = self._events
        if not evs:
            return []
        out = evs.copy()
        evs.clear()
        return out

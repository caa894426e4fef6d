"""The engine's outputs: transport commands and application events, in the order they were made.

Every part of the engine emits here and nowhere else; the engine facade
drains both lists (`take_commands`, `take_events`). Two kinds of command
are joined on their way in, so the adapter makes fewer calls:

- consecutive small plain Message frames written to one stream
  (`write_joined`) become one SendStreamData: the first stays a
  SendStreamData, a second turns it into a PendingWrite that later ones
  extend, and the parts are joined once, when the commands are drained.
  Anything else emitted in between, a FIN, or a payload of
  `COALESCE_BELOW` bytes or more starts a new write;
- a GrantCredit right after another one for the same stream is merged
  into it (takes in a row from one stream: one grant).

Spec: none (engine plumbing; frame placement is the spec's "Frames", done by the parts).
"""

from __future__ import annotations

from .app import AppEvent
from .transport import GrantCredit, SendStreamData, TransportCommand

COALESCE_BELOW = 4096
"""Payloads smaller than this join their neighbours on the same stream into one write."""


class PendingWrite:
    """Internal: consecutive joined writes to one stream, one SendStreamData when the commands are drained."""

    __slots__ = ("parts", "stream_id")

    def __init__(self, stream_id: int, parts: list[bytes]) -> None:
        self.stream_id = stream_id
        self.parts = parts

    def command(self) -> SendStreamData:
        """The write as a command."""
        return SendStreamData(self.stream_id, b"".join(self.parts))


class Outbox:
    """Commands and events waiting to be drained."""

    __slots__ = ("_commands", "_events", "_pending", "_tail")

    def __init__(self) -> None:
        self._commands: list[TransportCommand | PendingWrite] = []
        self._events: list[AppEvent] = []
        self._tail: SendStreamData | PendingWrite | None = None
        """The write the next `write_joined` to its stream may join."""
        self._pending = 0
        """PendingWrites among the commands."""

    def command(self, cmd: TransportCommand) -> None:
        """Emit a transport command."""
        self._commands.append(cmd)

    def has_commands(self) -> bool:
        """Whether any command waits to be drained."""
        return bool(self._commands)

    def event(self, ev: AppEvent) -> None:
        """Emit an application event."""
        self._events.append(ev)

    def write_joined(self, stream_id: int, frame: bytes, payload: bytes) -> None:
        """Write a plain Message frame (`frame` the bytes before `payload`), joining the write before it if that
        was one of these to the same stream."""
        cmds = self._commands
        tail = self._tail
        if len(payload) >= COALESCE_BELOW:  # large: one write each (joining many would copy them out of cache)
            cmds.append(SendStreamData(stream_id, frame + payload))
        elif tail is None or tail.stream_id != stream_id or not cmds or cmds[-1] is not tail:
            self._tail = SendStreamData(stream_id, frame + payload)
            cmds.append(self._tail)
        elif type(tail) is PendingWrite:
            tail.parts += (frame, payload)
        else:
            assert type(tail) is SendStreamData
            self._tail = cmds[-1] = PendingWrite(stream_id, [tail.data, frame, payload])
            self._pending += 1

    def grant_credit(self, stream_id: int, nbytes: int) -> None:
        """Emit GrantCredit, merged into a GrantCredit for the same stream just before it."""
        cmds = self._commands
        if cmds:
            last = cmds[-1]
            if type(last) is GrantCredit and last.stream_id == stream_id:
                cmds[-1] = GrantCredit(stream_id, last.nbytes + nbytes)
                return
        cmds.append(GrantCredit(stream_id, nbytes))

    def take_commands(self) -> list[TransportCommand]:
        """Drain the commands, in order."""
        out = self._commands
        if not out:
            return []
        self._commands = []
        if self._pending:
            self._pending = 0
            return [c.command() if isinstance(c, PendingWrite) else c for c in out]
        return out  # type: ignore[return-value]  # no PendingWrite in it

    def take_events(self) -> list[AppEvent]:
        """Drain the events, in order."""
        out, self._events = self._events, []
        return out

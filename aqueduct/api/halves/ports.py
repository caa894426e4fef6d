"""The port of a half: where a Sender or Receiver talks, as one object changed through one transition table.

Every half holds exactly one port, and what the half does follows from it:

- `Unwired`: just made, not yet given a pipe or a channel (`channel()` and `networked_half` wire it at once);
- `LocalPort(pipe)`: an in-process channel; both halves of a local pair share one port (ports never change
  in place: a change is a new port);
- `NetPort(link, handle, pipe)`: a channel on a connection (`link`, the engine's `handle`); a receiver whose
  sender moved away first drains what its old `pipe` still holds;
- `Closed(done, was, drops)`: ended here (finished, cancelled, closed); `was` is where it talked, still asked
  how the channel ended, and `drops` whether collecting it must still tell someone (a networked half: its
  drop lets the engine forget the channel);
- `Moved`: the half went to the peer inside a message; it is unusable (what stayed here was wired to the
  new channel: moving.py).

`_Half._move` is the only writer of a half's port, and it checks `PORT_MOVES` first: a move the table does
not connect is a library bug and raises IllegalTransition (core/transitions.py's rule, one floor up). Every
port answers `link`, `pipe`, `done` and `drops` (None or False where it has none), so the hot paths read the
port once and ask it (`link = port.link`: not None only on an open NetPort), with no type test; the two ports
of open halves hold these as slots (a class attribute read through an instance costs twice a slot's). Other
modules read a half's port through `port` and change it only through the halves' intention methods (`join`,
`bind`, `mark_moved`, `hand_on`, ...), each of which is one move of this table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...core.transitions import IllegalTransition
from ...errors import ChannelClosed
from ..validation import TypeSpec
from .base import Link, _Pipe


@dataclass(slots=True)
class Unwired:
    """A half just made: no pipe, no channel yet."""

    link: ClassVar[None] = None
    pipe: ClassVar[None] = None
    done: ClassVar[None] = None
    drops: ClassVar[bool] = False


@dataclass(slots=True)
class LocalPort:
    """An in-process channel: the pipe both halves share."""

    pipe: _Pipe
    link: None = field(default=None, init=False, repr=False)
    done: None = field(default=None, init=False, repr=False)
    drops: bool = field(default=True, init=False, repr=False)


@dataclass(slots=True)
class NetPort:
    """A channel on a connection: the link and the engine handle; for a receiver, the pipe it drains first."""

    link: Link
    handle: int
    pipe: _Pipe | None = None
    done: None = field(default=None, init=False, repr=False)
    drops: bool = field(default=True, init=False, repr=False)


@dataclass(slots=True)
class Closed:
    """Ended here: how (`done`), where it talked (`was`), whether collecting it still tells its channel."""

    done: str
    was: Unwired | LocalPort | NetPort
    drops: bool
    link: ClassVar[None] = None
    pipe: ClassVar[None] = None


@dataclass(slots=True)
class Moved:
    """Sent to the peer inside a message: unusable here."""

    link: ClassVar[None] = None
    pipe: ClassVar[None] = None
    done: ClassVar[str] = "moved into a message"
    drops: ClassVar[bool] = False


Port = Unwired | LocalPort | NetPort | Closed | Moved
UNWIRED, MOVED = Unwired(), Moved()

PORT_MOVES: dict[type[Port], frozenset[type[Port]]] = {
    Unwired: frozenset({LocalPort, NetPort, Closed, Moved}),  # (Closed, Moved: a half made by hand, never wired)
    LocalPort: frozenset({NetPort, Closed, Moved}),  # (to NetPort: its partner moved; a receiver keeps the pipe)
    NetPort: frozenset({Closed, Moved}),
    Closed: frozenset({Closed}),  # (a finished clone follows its channel, or the channel ends for every clone)
    Moved: frozenset(),
}
"""The moves a half's port may make, by port type."""


def talks_through(port: Port) -> LocalPort | NetPort | Unwired:
    """Where a half with `port` talks or talked (a closed half: where it was)."""
    if isinstance(port, Closed):
        return port.was
    return UNWIRED if isinstance(port, Moved) else port


class _Half:
    """What both halves share: the port (where they talk) and what dropping one does."""

    __slots__ = ("__weakref__", "_port", "_spec")
    _IS_SENDER: ClassVar[bool] = False

    def __init__(self) -> None:
        self._port: Port = UNWIRED
        self._spec: TypeSpec | None = None
        """The message type's spec (validation.py), or None: any value, nothing checked."""

    def __del__(self) -> None:
        if self._port.drops:
            self._dropped()

    def _dropped(self) -> None:
        raise NotImplementedError

    def _move(self, to: Port) -> None:
        """The one place a half's port changes: as PORT_MOVES allows, else IllegalTransition."""
        frm = self._port
        if type(to) not in PORT_MOVES[type(frm)]:
            raise IllegalTransition(f"{type(self).__name__}: no move from {type(frm).__name__} to {type(to).__name__}")
        self._port = to

    def _close(self, done: str, *, drops: bool | None = None) -> None:
        """End here: a Closed port; a networked half keeps its drop unless told (dropping it lets the engine
        forget the ended channel), a local one has nothing left to tell."""
        was = talks_through(self._port)
        self._move(Closed(done, was, isinstance(was, NetPort) if drops is None else drops))

    # ---- read by the library's other modules ----
    @property
    def port(self) -> Port:
        """Wiring: where this half talks (ports.py); changed only by the half itself."""
        return self._port

    @property
    def spec(self) -> TypeSpec | None:
        """The message type's spec (validation.py), or None: untyped."""
        return self._spec

    @property
    def link(self) -> Link | None:
        """The connection this half talks (or talked, if ended here) over; None if local or moved."""
        return talks_through(self._port).link  # (None but on a NetPort)

    @property
    def networked(self) -> bool:
        """Whether this half talks to a channel on a connection."""
        return isinstance(talks_through(self._port), NetPort)

    @property
    def message_type(self) -> Any:
        """The type every message on this channel has (Any: untyped)."""
        return self._spec.tp if self._spec is not None else Any

    # ---- intention methods (the library's wiring, not the application's) ----
    def type_as(self, spec: TypeSpec | None) -> None:
        """Wiring: give this half its message type (a typed channel, an entrypoint, a declared attachment)."""
        self._spec = spec

    def adopt(self, spec: TypeSpec | None) -> None:
        """Wiring: take the message type a typed message declares for this (untyped) half, and so does its local
        partner if it is untyped too."""
        self._spec = spec
        port = self._port
        if type(port) is LocalPort:
            ref = port.pipe.receiver if self._IS_SENDER else port.pipe.sender
            partner = ref() if ref is not None else None
            if partner is not None and partner.spec is None:
                partner.type_as(spec)

    def check_travel(self) -> None:
        """Wiring: raise ChannelClosed unless this half may be sent inside a message."""
        done = self._port.done
        if done is not None:
            raise ChannelClosed(f"cannot send a half that is {done}")

    def _where(self) -> str:
        port = talks_through(self._port)
        if type(port) is NetPort:
            return port.link.channel_name(port.handle)
        return "a local channel"

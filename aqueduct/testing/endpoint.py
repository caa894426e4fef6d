"""One side of a simulated connection: the engine surface the simulator drives, and the side's state.

`EngineLike` is what sim.py needs of an engine (aqueduct.core.engine.Engine
has it; fake.py's scripted stand-in too); `Endpoint` holds one side's engine,
the application events it emitted with their virtual times, and what the
transport knows of that side (handshake done, terminated).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from ..core.app import AppEvent
from ..core.transport import TransportCommand, TransportEvent
from ..wire.channel_id import Side


class EngineLike(Protocol):
    """The surface of `aqueduct.core.engine.Engine` the simulator drives."""

    def handle_event(self, event: TransportEvent, now: float) -> None: ...
    def handle_timer(self, now: float) -> None: ...
    def next_deadline(self) -> float | None: ...
    def update_rtt(self, rtt: float) -> None: ...
    def commands(self) -> list[TransportCommand]: ...
    def events(self) -> list[AppEvent]: ...


E = TypeVar("E", bound=EngineLike)


@dataclass
class Endpoint(Generic[E]):
    """One side: its engine, its app event log and its transport state."""

    side: Side
    engine: E
    log: list[tuple[float, AppEvent]] = field(default_factory=list)
    """Every app event the engine emitted, with the virtual time it was drained."""
    handshake_done: bool = False
    terminated: bool = False
    received: int = 0
    """Transport events handed to this engine."""
    _cursor: int = 0

    @property
    def events(self) -> list[AppEvent]:
        """All app events so far, in order."""
        return [ev for _, ev in self.log]

    def take_events(self) -> list[AppEvent]:
        """App events since the previous call."""
        new = [ev for _, ev in self.log[self._cursor :]]
        self._cursor = len(self.log)
        return new

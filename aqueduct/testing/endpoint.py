"""One side of a simulated connection: the engine surface the simulator drives, and the side's state.

`EngineLike` is what sim.py needs of an engine (aqueduct.core.engine.Engine
has it; fake.py's scripted stand-in too); `Endpoint` holds one side's engine,
the application events it emitted with their virtual times, and what the
transport knows of that side (handshake done, terminated). `DrivenEngine` adds
the application calls the random driver (driver.py, actions.py) makes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from ..core.app import AppEvent, AttachKind, Delivered, Delivery, SendResult
from ..core.transport import TransportCommand, TransportEvent
from ..errors import EndReason
from ..wire.channel_id import Side


class EngineLike(Protocol):
    """The surface of `aqueduct.core.engine.Engine` the simulator drives."""

    def handle_event(self, event: TransportEvent, now: float) -> None:
        """Take one transport event (stream data, a datagram, the handshake's end, ...) at time `now`."""

    def handle_timer(self, now: float) -> None:
        """The deadline `next_deadline` gave has come."""

    def next_deadline(self) -> float | None:
        """When `handle_timer` is next due (None: no timer)."""

    def update_rtt(self, rtt: float) -> None:
        """The transport's current round-trip time estimate, in seconds."""

    def commands(self) -> list[TransportCommand]:
        """The transport commands (writes, resets, closes) queued since the last call, taken."""

    def events(self) -> list[AppEvent]:
        """The application events queued since the last call, taken."""


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


class DrivenEngine(EngineLike, Protocol):
    """The application surface of the engine the driver uses (aqueduct.core.engine.Engine)."""

    @property
    def entrypoint(self) -> int | None: ...
    def send(
        self,
        sender: int,
        payload: bytes,
        attach: Sequence[AttachKind] = (),
        delivery: Delivery = Delivery.ORDERED,
        now: float | None = None,
    ) -> SendResult: ...
    def finish(self, sender: int, now: float | None = None) -> None: ...
    def cancel(self, sender: int, now: float | None = None) -> None: ...
    def close_receiver(self, receiver: int, now: float | None = None) -> None: ...
    def take_message(self, receiver: int, now: float | None = None) -> Delivered | None: ...
    def drop_sender(self, sender: int, now: float | None = None) -> None: ...
    def drop_receiver(self, receiver: int, now: float | None = None) -> None: ...
    def close(self, error_code: int = 0, reason: str = "", now: float | None = None) -> None: ...
    def state_sizes(self) -> dict[str, int]: ...
    def sender_status(self, handle: int) -> EndReason | None: ...
    def receiver_status(self, handle: int) -> EndReason | None: ...

"""Events an `Endpoint` reports to the layer above, one dataclass per kind.

`stream_id` None means the global (connection-wide) variant where one exists.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StreamOpened:
    """The peer created a stream."""

    stream_id: int


@dataclass(frozen=True)
class DataReceived:
    """Bytes the peer wrote to a stream (never empty)."""

    stream_id: int
    data: bytes


@dataclass(frozen=True)
class CreditReceived:
    """The peer gave us credit (0 meaning infinite); global credit creates streams."""

    stream_id: int | None
    amount: int


@dataclass(frozen=True)
class PongReceived:
    """A pong arrived."""

    stream_id: int | None


@dataclass(frozen=True)
class CloseReceived:
    """The peer will write no more: the end of its data (global: it creates no more streams)."""

    stream_id: int | None


@dataclass(frozen=True)
class StopReadReceived:
    """The peer reads no more: our writes end, queued data was dropped (global: no more global credit)."""

    stream_id: int | None


@dataclass(frozen=True)
class StreamEnded:
    """Both sides sent and received Close and StopRead: the id is free again."""

    stream_id: int


Event = StreamOpened | DataReceived | CreditReceived | PongReceived | CloseReceived | StopReadReceived | StreamEnded
"""What `Endpoint.next_event()` returns: one of the event types above."""

"""What a Stream connection tells its owner: the events `Connection.events` holds, oldest first."""

from __future__ import annotations

from dataclasses import dataclass

from aeron_compat.marlin.errors import StreamError


@dataclass(frozen=True, slots=True)
class Established:
    """The handshake completed."""


@dataclass(frozen=True, slots=True)
class StreamOpened:
    """The peer sent the first bytes of a stream this side had not opened."""

    stream_id: int


@dataclass(frozen=True, slots=True)
class Readable:
    """In-order bytes (or the FIN) became readable on a stream."""

    stream_id: int


@dataclass(frozen=True, slots=True)
class Writable:
    """Queued bytes were sent, so the send buffer has room again."""


@dataclass(frozen=True, slots=True)
class AllAcked:
    """An ACK left nothing queued, lost or unacknowledged: the peer has every byte sent so far."""


@dataclass(frozen=True, slots=True)
class Closed:
    """The connection ended; `error` is None for a local close."""

    error: StreamError | None


Event = Established | StreamOpened | Readable | Writable | AllAcked | Closed

"""Errors of the Stream endpoint; all derive from AqueductError."""

from __future__ import annotations

from aeron_compat.marlin.packets import StreamWireError
from aqueduct.errors import AqueductError, LimitExceeded

__all__ = [
    "StreamError",
    "StreamLimitExceeded",
    "StreamProtocolError",
    "StreamReset",
    "StreamTimeout",
    "StreamWireError",
]


class StreamError(AqueductError):
    """A Stream connection failed or was used wrongly."""


class StreamProtocolError(StreamError):
    """The peer broke a protocol rule (e.g. moved a FIN); the connection is reset."""


class StreamReset(StreamError):
    """The peer reset the connection, or the handshake was never answered."""


class StreamTimeout(StreamError):
    """No packet from the peer within the idle timeout."""


class StreamLimitExceeded(StreamError, LimitExceeded):
    """A configured bound (connections, streams, send buffer) would be exceeded."""

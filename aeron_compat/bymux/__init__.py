"""bymux: many byte streams over one reliable ordered byte channel.

`Endpoint` is the sans-I/O protocol; `open_connection` runs it over an
asyncio byte stream. Bit order and other spec decisions: specs/decisions/bymux.md.
"""

from .aio import Connection, Stream, open_connection
from .codec import PacketHead, PacketType
from .credit import INFINITE
from .endpoint import DEFAULT_MAX_PACKET_SIZE, Endpoint
from .errors import BymuxError, ConnectionLost, ConnectionTerminated, Rule, StreamStopped, UsageError
from .events import (
    CloseReceived,
    CreditReceived,
    DataReceived,
    Event,
    PongReceived,
    StopReadReceived,
    StreamEnded,
    StreamOpened,
)
from .interface import ByteStream, StreamConnection, read_exactly

__all__ = [
    "DEFAULT_MAX_PACKET_SIZE",
    "INFINITE",
    "BymuxError",
    "ByteStream",
    "CloseReceived",
    "Connection",
    "ConnectionLost",
    "ConnectionTerminated",
    "CreditReceived",
    "DataReceived",
    "Endpoint",
    "Event",
    "PacketHead",
    "PacketType",
    "PongReceived",
    "Rule",
    "StopReadReceived",
    "Stream",
    "StreamConnection",
    "StreamEnded",
    "StreamOpened",
    "StreamStopped",
    "UsageError",
    "open_connection",
    "read_exactly",
]

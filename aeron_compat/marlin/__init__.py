"""Marlin Stream: reliable, ordered byte streams over UDP, many per connection.

`packets` is the wire (profiles "seed" and "openweaver"), `connection` the
sans-I/O state machine of one connection, `endpoint` the demultiplexer of one
socket, `limits` every bound. No module here touches sockets or asyncio
except the adapter in `aio`.
"""

from aeron_compat.marlin.connection import Connection, State
from aeron_compat.marlin.endpoint import Endpoint
from aeron_compat.marlin.errors import (
    StreamError,
    StreamLimitExceeded,
    StreamProtocolError,
    StreamReset,
    StreamTimeout,
    StreamWireError,
)
from aeron_compat.marlin.limits import StreamConfig

__all__ = ["Connection", "Endpoint", "State", "StreamConfig", "StreamError", "StreamLimitExceeded",
           "StreamProtocolError", "StreamReset", "StreamTimeout", "StreamWireError"]

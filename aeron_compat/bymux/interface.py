"""The transport-neutral stream API that applications code against.

Both bymux-over-a-byte-stream (`aio.open_connection`) and bymux streams on
Aqueduct channels (`on_aqueduct`) satisfy these protocols, so an application
switches transport by changing only how it obtains the connection. Errors
are the same on both: `StreamStopped` when the peer stopped reading (writes
end), `ConnectionLost` when the connection went away.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class ByteStream(Protocol):
    """One bidirectional, flow-controlled byte stream."""

    async def read(self, max_bytes: int = 65536) -> bytes:
        """Up to `max_bytes` bytes; b"" once the peer closed and everything was read."""
        ...

    async def write(self, data: bytes) -> None:
        """Send `data`, waiting for credit; StreamStopped if the peer stopped reading."""
        ...

    async def ping(self) -> float:
        """Round-trip time in seconds of a ping on this stream."""
        ...

    async def close(self) -> None:
        """Write no more; data already written is still delivered."""
        ...

    async def stop_read(self) -> None:
        """Read no more: the peer's writes end, buffered data is dropped."""
        ...


@runtime_checkable
class StreamConnection(Protocol):
    """A connection carrying many byte streams."""

    async def open_stream(self) -> ByteStream:
        """Create a stream, waiting while the peer allows no more."""
        ...

    async def accept_stream(self) -> ByteStream:
        """The next stream the peer created; ConnectionLost once no more can come."""
        ...

    async def close(self) -> None:
        """End the connection."""
        ...


async def read_exactly(stream: ByteStream, n: int) -> bytes:
    """Exactly `n` bytes from `stream`; EOFError if it ends first."""
    parts = bytearray()
    while len(parts) < n:
        chunk = await stream.read(n - len(parts))
        if not chunk:
            raise EOFError(f"stream ended after {len(parts)} of {n} bytes")
        parts += chunk
    return bytes(parts)

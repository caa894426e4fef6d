# The half of a bymux stream that is the same over bytes (aio.py) and over Aqueduct channels
# (on_aqueduct.py): received bytes wait in `_buffer` until read(), which then restores credit the
# carrier's own way (`_restore_credit`); pings are answered in the order sent, and the ones still
# waiting fail together when the stream or connection ends.  Waiters sleep on `_pulse`.
# `StreamAcceptor` is the matching connection half: streams the peer created wait in `_accepted`.
"""`BufferedStream` and `StreamAcceptor`: the carrier-independent halves of bymux streams and connections."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, Protocol, TypeVar

from .errors import BymuxError, ConnectionLost
from .pulse import Pulse


class _Carrier(Protocol):
    lost: ConnectionLost | None


class BufferedStream:
    """A bymux stream's read buffer and pending pings; subclasses say how credit is restored."""

    _conn: _Carrier

    def __init__(self, stream_id: int) -> None:
        self.stream_id = stream_id
        self._buffer = bytearray()
        self._eof = False  # nothing more to read
        self._pings: deque[tuple[float, asyncio.Future[float]]] = deque()
        self._pulse = Pulse()

    @property
    def buffered(self) -> int:
        """Received bytes not yet read."""
        return len(self._buffer)

    async def read(self, max_bytes: int = 65536) -> bytes:
        """Up to `max_bytes` bytes; b"" once the peer closed (or we stopped reading)."""
        conn = self._conn
        await self._pulse.wait_for(lambda: bool(self._buffer) or self._eof or conn.lost is not None)
        if self._buffer:
            data = bytes(self._buffer[:max_bytes])
            del self._buffer[:max_bytes]
            await self._restore_credit()
            return data
        if self._eof:
            return b""
        assert conn.lost is not None
        raise conn.lost

    async def _restore_credit(self) -> None:
        raise NotImplementedError

    def _resolve_ping(self) -> None:
        """A pong came: the oldest pending ping gets its round-trip time."""
        if self._pings:
            sent, fut = self._pings.popleft()
            if not fut.done():
                fut.set_result(asyncio.get_running_loop().time() - sent)

    def _fail_pings(self, error: BymuxError) -> None:
        while self._pings:
            _, fut = self._pings.popleft()
            if not fut.done():
                fut.set_exception(error)


S = TypeVar("S", bound=BufferedStream)


class StreamAcceptor(Generic[S]):
    """Hands out the streams the peer created; subclasses say when the peer will create no more."""

    lost: ConnectionLost | None
    _accepted: deque[S]
    _pulse: Pulse

    def _peer_finished(self) -> bool:
        raise NotImplementedError

    async def accept_stream(self) -> S:
        """The next stream the peer created."""
        await self._pulse.wait_for(lambda: bool(self._accepted) or self.lost is not None or self._peer_finished())
        if self._accepted:
            return self._accepted.popleft()
        if self.lost is not None:
            raise self.lost
        raise ConnectionLost("the peer creates no more streams")

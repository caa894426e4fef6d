# The two ends of a publication session that crosses a Marlin Stream connection: one Stream stream
# per session, opened by the publishing driver.  Forward, after the "setup" frame, the stream carries
# the log's frames as length-prefixed batches (batch.py's encoding, at most BATCH_BYTES of frames
# each); an empty frame means "lost" (the publisher dropped this subscriber: the image becomes
# unavailable without end of stream), and the end of the stream is end of stream.  Backward, the
# same stream carries the image's positions, 8 bytes each, which are the sink's position for flow
# control; the subscriber ends its half when its image closes, which ends the sink.  Stream delivers
# everything in order and reliably, so `reliable=false` changes nothing on this media.
"""Publication sinks and receiving sessions for the Marlin Stream transport."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from aqueduct.errors import AqueductError

from ..marlin.aio import StreamWriter
from .batch import encode_batch
from .marlin_link import MarlinLink, encode_message, read_frame, write_frame
from .sessions import BATCH_BYTES, RemoteSink, SessionCore, SessionHost

if TYPE_CHECKING:
    from ..client.subscription import Subscription

_POSITION = struct.Struct("<q")
FRAME_LIMIT = BATCH_BYTES + 65536 + 64
"""Largest batch body: a batch holds at least one frame, and a frame is at most an MTU (< 64 KiB)."""


class MarlinSink(RemoteSink):
    """Frames of one log to one remote subscriber, on a Stream stream of their own."""

    async def run(self) -> None:
        """Open the session's stream, send the setup, then pump batches until end of stream, loss or
        disconnection."""
        log, link = self.log, self.subscriber.link
        status_task: asyncio.Task[None] | None = None
        try:
            if not isinstance(link, MarlinLink):
                raise TypeError("a MarlinSink needs a MarlinLink")
            reader, writer = link.conn.open_stream()
            write_frame(writer, encode_message({
                "t": "setup", "sub": self.subscriber.remote_id, "stream": log.stream_id, "session": log.session_id,
                "itid": log.initial_term_id, "tl": log.term_length, "mtu": log.mtu, "join": self.join_position,
                "win": log.window, "rel": True, "rcid": log.response_correlation_id}))
            status_task = asyncio.create_task(self._read_positions(reader))
            while (frames := await self.next_frames(BATCH_BYTES)) is not None:
                write_frame(writer, encode_batch(frames))
                await writer.drain()
            if self.dropped:
                write_frame(writer, b"")
                writer.write_eof()
            else:
                writer.write_eof()
                await writer.drain()
                await status_task
        except (AqueductError, ConnectionError):
            self.net.count("connection_errors")
        finally:
            if status_task is not None:
                status_task.cancel()
            self._detach()

    async def _read_positions(self, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(AqueductError, ConnectionError, asyncio.IncompleteReadError):
            while True:
                (position,) = _POSITION.unpack(await reader.readexactly(_POSITION.size))
                self.position_read(position)
        self.status_ended()


class MarlinSession(SessionCore):
    """One remote publication session arriving on a Stream stream, feeding one local image."""

    def __init__(self, net: SessionHost, link: MarlinLink, sub: Subscription, msg: dict[str, Any]) -> None:
        super().__init__(net, link, sub, msg)
        self.data: asyncio.StreamReader = msg["data"]
        self.status: StreamWriter = msg["status"]
        self._task: asyncio.Task[Any] | None = None

    def report(self) -> None:
        """Send the image's position (loop)."""
        position = self.image.position
        if self.closed or position <= self.reported:
            return
        try:
            self.status.write(_POSITION.pack(position))
            self.reported = position
        except (AqueductError, ConnectionError):
            self.shutdown()

    async def batches(self) -> AsyncIterator[bytes]:
        """The stream's frames until it ends (end of stream); an empty frame is the publisher saying "lost"."""
        while (batch := await read_frame(self.data, FRAME_LIMIT)) is not None:
            if not batch:
                raise ConnectionError("the publisher lost its session")
            yield batch

    async def run(self) -> None:
        """SessionCore.run, cancellable by `shutdown` from outside."""
        self._task = asyncio.current_task()
        try:
            await super().run()
        finally:
            self._task = None

    def shutdown(self) -> None:
        """Stop reading and end our half of the stream (loop)."""
        if self.closed:
            return
        self.closed = True
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
        with contextlib.suppress(AqueductError, ConnectionError):
            self.status.close()
        self.net.sessions.discard(self)

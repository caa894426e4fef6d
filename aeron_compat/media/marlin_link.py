# A MarlinLink is one Marlin Stream connection between two drivers.  The dialling driver opens the
# connection's first stream for control messages and writes "hello" on it; every other stream, opened
# by either side, carries one publication session (see media/marlin_session.py) and starts with that
# session's "setup" message.  On every stream the bytes are frames: a 4-byte little-endian length,
# then the body (control and setup messages are JSON objects; a session's later frames are batches
# from batch.py).  Bodies are bounded before they are read, so a hostile peer cannot make a driver
# buffer more than one frame's limit per stream; bytes that do not parse end that stream or link.
"""`MarlinLink` and the frames on its streams, for the Marlin Stream transport."""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
from typing import Any

from aqueduct.errors import AqueductError

from ..marlin.aio import StreamConnection, StreamWriter
from .batch import BatchError
from .link import ControlLink, OnControl

_LENGTH = struct.Struct("<I")
CONTROL_LIMIT = 64 * 1024
"""Largest control or setup message body."""


def write_frame(writer: StreamWriter, body: bytes) -> None:
    """Queue one frame on a stream."""
    writer.write(_LENGTH.pack(len(body)) + body)


async def read_frame(reader: asyncio.StreamReader, limit: int) -> bytes | None:
    """The next frame's body; None at a clean end of stream; BatchError on a frame above `limit` or
    a stream ending inside a frame."""
    try:
        head = await reader.readexactly(_LENGTH.size)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise BatchError("stream ended inside a frame length") from None
        return None
    (length,) = _LENGTH.unpack(head)
    if length > limit:
        raise BatchError(f"frame of {length} bytes above the limit of {limit}")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise BatchError("stream ended inside a frame") from None


def encode_message(msg: dict[str, Any]) -> bytes:
    """A control or setup message as a frame body."""
    return json.dumps(msg, separators=(",", ":")).encode()


def decode_message(body: bytes) -> dict[str, Any]:
    """A frame body as a control message (BatchError unless it is a JSON object)."""
    try:
        msg = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise BatchError("control frame is not JSON") from None
    if not isinstance(msg, dict):
        raise BatchError("control frame is not an object")
    return msg


def address_of(conn: StreamConnection) -> str:
    """The peer's UDP address as host:port."""
    host, port = conn.peer[:2]
    return f"{host}:{port}"


class MarlinLink(ControlLink):
    """One Stream connection between two drivers: a control stream, and one stream per session.

    Sessions the peer opens reach `on_control` as their "setup" message with the stream's reader
    under "data" and its writer under "status" (objects JSON cannot produce, so a "setup" sent on
    the control stream is refused).
    """

    def __init__(self, on_control: OnControl, conn: StreamConnection,
                 reader: asyncio.StreamReader, writer: StreamWriter, endpoint: str | None = None,
                 listener: str | None = None) -> None:
        super().__init__(on_control, address_of(conn), endpoint, listener)
        self.conn, self.reader, self.writer = conn, reader, writer
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Write queued control messages, accept session streams and dispatch incoming control messages
        until the control stream or the connection ends; then close the connection."""
        self._start(self._write())
        self._start(self._accept())
        try:
            while (body := await read_frame(self.reader, CONTROL_LIMIT)) is not None:
                self.on_control(self, decode_message(body))
        except (AqueductError, BatchError, ConnectionError):
            pass
        finally:
            self.alive = False
            for task in list(self._tasks):
                task.cancel()
            self.conn.close()

    def _start(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(self) -> None:
        with contextlib.suppress(AqueductError, ConnectionError):
            while True:
                while self._queue:
                    write_frame(self.writer, encode_message(self._queue.popleft()))
                await self.writer.drain()
                self._wake.clear()
                if not self._queue:
                    await self._wake.wait()

    async def _accept(self) -> None:
        with contextlib.suppress(AqueductError, ConnectionError):
            while True:
                reader, writer = await self.conn.accept_stream()
                self._start(self._session_stream(reader, writer))

    async def _session_stream(self, reader: asyncio.StreamReader, writer: StreamWriter) -> None:
        try:
            body = await read_frame(reader, CONTROL_LIMIT)
            msg = decode_message(body) if body is not None else {}
        except (AqueductError, BatchError, ConnectionError):
            msg = {}
        if msg.get("t") != "setup":
            writer.close()
            return
        msg["data"], msg["status"] = reader, writer
        self.on_control(self, msg)

    async def aclose(self) -> None:
        """Close the connection."""
        self.conn.close()

# The two ends of a publication session that crosses an Aqueduct connection.
#   AqueductSink     (publication side) a task batches the log's frames onto a data Sender; a second
#                    task reads the subscriber's positions from a status Receiver.  Both halves'
#                    partners travel attached to the "setup" control message.  A `reliable=false`
#                    channel sends a batch that fits a datagram unreliably, a larger one ordered.
#   AqueductSession  (subscription side) reads the data Receiver and reports the image's position on
#                    the status Sender (retried shortly while that channel is full).
# The transport-neutral halves (queueing, batching, feeding the image) are sessions.py's.
"""Publication sinks and receiving sessions for the Aqueduct transport."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from aqueduct.api import Receiver, Sender, channel
from aqueduct.errors import AqueductError, WouldBlock

from .batch import encode_batch
from .sessions import BATCH_BYTES, RemoteSink, SessionCore, SessionHost

if TYPE_CHECKING:
    from ..client.subscription import Subscription
    from .link import ControlLink

DATAGRAM_OVERHEAD = 16
"""Bytes of a datagram the Aqueduct message around a batch may take."""


class AqueductSink(RemoteSink):
    """Frames of one log to one remote subscriber on a data channel; its position comes back on a status one."""

    _status: Receiver[Any] | None = None

    async def run(self) -> None:
        """Send the setup, then pump frames until end of stream, loss or disconnection."""
        log, link = self.log, self.subscriber.link
        reliable = log.channel.get("reliable") != "false"
        tx, rx = channel()
        status_tx, self._status = channel()
        link.send_ctl({"t": "setup", "sub": self.subscriber.remote_id, "stream": log.stream_id,
                       "session": log.session_id, "itid": log.initial_term_id, "tl": log.term_length,
                       "mtu": log.mtu, "join": self.join_position, "win": log.window, "rel": reliable,
                       "rcid": log.response_correlation_id, "data": rx, "status": status_tx})
        status_task = asyncio.create_task(self._read_status())
        try:
            await self._pump(tx, reliable, link)
            if self.dropped:
                tx.cancel()
            else:
                await tx.finish()
                await status_task
        except (AqueductError, ConnectionError):
            self.net.count("connection_errors")
        finally:
            status_task.cancel()
            self._detach()

    async def _pump(self, tx: Sender[Any], reliable: bool, link: ControlLink) -> None:
        limit = BATCH_BYTES if reliable else max(link.datagram_limit - DATAGRAM_OVERHEAD, 64)
        while (frames := await self.next_frames(limit)) is not None:
            data = encode_batch(frames)
            await tx.send(data, "ordered" if reliable or len(data) > limit else "unreliable")

    async def _read_status(self) -> None:
        assert self._status is not None
        with contextlib.suppress(AqueductError, ConnectionError, StopAsyncIteration):
            async for position in self._status:
                if isinstance(position, int):
                    self.position_read(position)
        self.status_ended()

    def _detach(self) -> None:
        """Leave the log and the subscriber, and close the status channel."""
        super()._detach()
        if self._status is not None:
            self._status.close()


class AqueductSession(SessionCore):
    """A session whose frames come on an Aqueduct channel and whose status goes back on another."""

    def __init__(self, net: SessionHost, link: ControlLink, sub: Subscription, msg: dict[str, Any]) -> None:
        super().__init__(net, link, sub, msg)
        self.data: Receiver[Any] = msg["data"]
        self.status: Sender[Any] = msg["status"]

    def report(self) -> None:
        """Send the image's position (retried shortly if the status channel is full)."""
        position = self.image.position
        if self.closed or position <= self.reported:
            return
        try:
            self.status.try_send(position)
            self.reported = position
        except WouldBlock:
            self.net.loop.call_later(0.001, self.report)
        except AqueductError:
            self.shutdown()

    def batches(self) -> AsyncIterator[bytes]:
        """The data channel's messages (it finishes at end of stream)."""
        return aiter(self.data)

    def shutdown(self) -> None:
        """Close both channels."""
        if self.closed:
            return
        self.closed = True
        self.data.close()
        with contextlib.suppress(AqueductError):
            self.status.cancel()
        self.net.sessions.discard(self)

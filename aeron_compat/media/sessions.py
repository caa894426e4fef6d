# The two ends of a publication session that crosses a connection between drivers, whatever the transport.
#   RemoteSubscriber  (publication side) a subscription of another driver, known by its "reg"
#                     message; the matcher links it to local logs like any subscription, and each
#                     log it attaches to gets a sink of its transport's `sink_type`.
#   RemoteSink        (publication side) one log -> one remote subscriber: the log's frames queue
#                     here (bounded by the log's window) and `next_frames` hands them to the
#                     transport's sending task in batches; the subscriber's positions, read back
#                     by that task, are the sink's position for flow control.
#   SessionCore       (subscription side) one remote publication feeding one local image: it
#                     validates batches (batch.py), delivers their new frames, and reports the
#                     image's position each time it advances by a quarter window (so the publisher
#                     is never starved); the transport's subclass reads and reports.
# aqueduct_session.py and marlin_session.py are the transports' halves.  Every method marked "loop"
# runs on the driver's event loop; the others may run on any thread.
"""Remote subscribers, publication sinks and receiving sessions, for every transport."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from aqueduct.errors import AqueductError

from ..client.image import Image
from ..client.logbuffer import Frame
from ..client.publication import PublicationLog
from .batch import BatchError, decode_batch

if TYPE_CHECKING:
    from ..client.subscription import Subscription
    from .link import ControlLink

BATCH_BYTES = 32 * 1024
"""Frames per batch a sink sends on an ordered carrier (about; at least one frame)."""


class SessionHost(Protocol):
    """What sinks and sessions ask of the network that owns them (`DriverNetwork`)."""

    loop: asyncio.AbstractEventLoop
    sessions: set[SessionCore]

    def call(self, fn: Callable[[], object]) -> None:
        """Run `fn` on the network's loop."""

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """A task on the loop, cancelled when the network closes (loop)."""

    def count(self, name: str, n: int = 1) -> None:
        """Bump a driver counter."""

    def next_id(self) -> int:
        """A fresh correlation id."""


class RemoteSubscriber:
    """A subscription of the driver at the other end of `link`."""

    def __init__(self, net: SessionHost, link: ControlLink, remote_id: int, stream_id: int,
                 session_filter: int | None, sink_type: type[RemoteSink]) -> None:
        self.net, self.link, self.remote_id = net, link, remote_id
        self.sink_type = sink_type
        self.stream_id = stream_id
        self.session_filter = session_filter
        self.is_closed = False
        self._images: tuple[Image, ...] = ()
        self.sinks: list[RemoteSink] = []

    def _sinks_from(self, log: PublicationLog) -> list[RemoteSink]:
        return [s for s in self.sinks if s.log is log]

    def _attach(self, log: PublicationLog) -> None:
        with log.lock:
            sink = self.sink_type(self, log, log.appender.tail)
            log.add_sink(sink)
        self.sinks.append(sink)
        self.net.call(lambda: self.net.spawn(sink.run()))

    def close(self) -> None:
        """The remote subscription went away: drop every sink."""
        self.is_closed = True
        for sink in list(self.sinks):
            sink.lost()


class RemoteSink:
    """Frames of one log to one remote subscriber, sent by the transport's `run`; its position comes back."""

    def __init__(self, subscriber: RemoteSubscriber, log: PublicationLog, join_position: int) -> None:
        self.subscriber, self.log = subscriber, log
        self.net = subscriber.net
        self.position = join_position
        self.join_position = join_position
        self.queue: deque[list[Frame]] = deque()
        self.idle = False
        self.eos: int | None = None
        self.dropped = False
        self._wake = asyncio.Event()

    # --- any thread ----------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        """Still sending."""
        return not self.dropped

    def deliver(self, frames: list[Frame]) -> None:
        """Queue frames for the sending task (bounded by the log's window)."""
        self.queue.append(frames)
        if self.idle:
            self.idle = False
            self.net.call(self._wake.set)

    def end_of_stream(self, final_position: int) -> None:
        """Send what is queued, then end the session's carrier."""
        self.eos = final_position
        self.net.call(self._wake.set)

    def lost(self) -> None:
        """Stop at once: the remote image becomes unavailable without end of stream."""
        self.dropped = True
        self.net.call(self._wake.set)

    # --- loop ----------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Send the setup, then the log's frames until end of stream, loss or disconnection; end with
        `_detach` (the transport's sending task)."""
        raise NotImplementedError

    async def next_frames(self, limit: int) -> list[Frame] | None:
        """The next contiguous frames to send (about `limit` bytes encoded; at least one frame), waiting
        while none are queued; None at end of stream or once dropped."""
        while not self.dropped:
            if not self.queue:
                if self.eos is not None:
                    return None
                self._wake.clear()
                self.idle = True
                if not self.queue and self.eos is None and not self.dropped:
                    await self._wake.wait()
                self.idle = False
                continue
            frames: list[Frame] = []
            size = 8
            while self.queue and size < limit:
                batch = self.queue.popleft()
                for i, frame in enumerate(batch):
                    cost = 13 + len(frame.payload)
                    if frames and size + cost > limit:
                        self.queue.appendleft(batch[i:])
                        break
                    frames.append(frame)
                    size += cost
                else:
                    continue
                break
            return frames
        return None

    def position_read(self, position: int) -> None:
        """The subscriber reported `position` (loop)."""
        if position > self.position:
            self.position = position

    def status_ended(self) -> None:
        """The subscriber's positions stopped coming: stop sending (loop)."""
        self.dropped = True
        self._wake.set()

    def _detach(self) -> None:
        """Leave the log and the subscriber (the sending task ended)."""
        self.dropped = True
        with self.log.lock:
            self.log.remove_sink(self)
        if self in self.subscriber.sinks:
            self.subscriber.sinks.remove(self)


class SessionCore:
    """One remote publication session feeding one local subscription's image (any transport)."""

    def __init__(self, net: SessionHost, link: ControlLink, sub: Subscription, msg: dict[str, Any]) -> None:
        self.net, self.link, self.sub = net, link, sub
        self.session_id = int(msg["session"])
        self.stream_id = int(msg["stream"])
        self.initial_term_id = int(msg["itid"])
        self.term_length = int(msg["tl"])
        self.window = int(msg["win"])
        self.reliable = bool(msg["rel"])
        join = int(msg["join"])
        self.received = join
        self.reported = join
        self.image = Image(sub, self.session_id, self.initial_term_id, self.term_length, join, link.peer,
                           net.next_id(), self, int(msg.get("rcid") or 0))
        self.image._consumed_hook = self._consumed
        self.image._report_at = join + max(self.window // 4, 32)
        self.closed = False

    # --- any thread ----------------------------------------------------------------------------------
    def _consumed(self) -> None:
        self.image._report_at = self.image.position + max(self.window // 4, 32)
        self.net.call(self.report)

    def remove_sink(self, sink: object) -> None:
        """The image closed (drained after end of stream, or its subscription closed)."""
        self.net.call(self.shutdown)

    # --- loop ----------------------------------------------------------------------------------------
    def feed(self, batch: bytes) -> None:
        """Deliver one received batch's new frames to the image (raises BatchError on bad bytes)."""
        frames = decode_batch(batch, self.initial_term_id, self.term_length)
        fresh = [f for f in frames if f.position >= self.received]
        if not fresh:
            return
        if fresh[0].position > self.received:
            self.net.count("nacks")
        self.received = fresh[-1].next_position
        self.image.deliver(fresh)

    def report(self) -> None:
        """Send the image's position back to the publisher."""
        raise NotImplementedError

    def batches(self) -> AsyncIterator[bytes]:
        """The session's batches in order: they end at the publisher's end of stream, and raise
        (BatchError, AqueductError, ConnectionError) when the session is lost."""
        raise NotImplementedError

    async def run(self) -> None:
        """Feed the image until the batches end (end of stream) or fail (lost)."""
        try:
            async for batch in self.batches():
                self.feed(batch)
            self.image.end_of_stream(self.received)
        except BatchError:
            self.net.count("errors")
            self.image.lost()
        except (AqueductError, ConnectionError):
            self.image.lost()
        finally:
            if self.image.is_closed:
                self.shutdown()

    def shutdown(self) -> None:
        """Stop receiving and release the transport's resources."""
        raise NotImplementedError

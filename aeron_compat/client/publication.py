# Publications.  A PublicationLog is one stream session (stream id, session id): its term appender,
# its sinks (the images or remote links that receive its frames) and its flow-control limit.
# Concurrent publications on the same channel and stream share one log (and session), as in Aeron;
# an exclusive publication always has its own.  offer() appends under the log's lock and hands the
# frames to every sink at once; the limit is min(sink positions) + window, recomputed only when the
# tail reaches the cached value.  A pending try_claim holds back later frames (readers in Aeron stop
# at an uncommitted frame too) until it is committed or aborted (which becomes padding).
"""`Publication`, `ExclusivePublication` and `BufferClaim`."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Any, Protocol

from .claim import ClaimBase
from .codes import (
    ADMIN_ACTION,
    BACK_PRESSURED,
    BEGIN_FLAG,
    CLOSED,
    END_FLAG,
    HDR_TYPE_DATA,
    HDR_TYPE_PAD,
    HEADER_LENGTH,
    MAX_POSITION_EXCEEDED,
    NOT_CONNECTED,
    UNFRAGMENTED,
    MessageTooLongError,
    PublicationClosedError,
    PublicationResult,
)
from .counters import Counters
from .logbuffer import Frame, TermAppender, max_message_length, term_id_of
from .uri import ChannelUri

_new_frame = tuple.__new__


class Sink(Protocol):
    """Receives a log's frames: a local Image or a link to a remote driver."""

    position: int

    def deliver(self, frames: list[Frame]) -> None:
        """Take frames in stream order."""

    def end_of_stream(self, final_position: int) -> None:
        """The log closed."""

    def lost(self) -> None:
        """The log dropped this sink (destination removed)."""

    @property
    def connected(self) -> bool:
        """Still receiving."""


class PublicationOwner(Protocol):
    """The driver a log belongs to: an embedded MediaDriver, or the proxy of a standalone one."""

    counters: Counters

    def add_destination(self, log: PublicationLog, destination: str) -> None:
        """Manual MDC: also send `log` to `destination`."""

    def remove_destination(self, log: PublicationLog, destination: str) -> None:
        """Manual MDC: stop sending `log` to `destination`."""

    def release_publication(self, log: PublicationLog) -> None:
        """Drop one handle on `log`; the last one closes it."""


class BufferClaim(ClaimBase):
    """Space claimed in a publication by `try_claim`: fill `buffer`, then commit (or abort).

    As a context manager it commits on normal exit and aborts on exception.  A failed claim is falsy
    and `result` holds the PublicationResult code; a successful one holds the new stream position.
    """

    def __init__(self, log: PublicationLog | None, result: int, position: int = 0, length: int = 0) -> None:
        super().__init__(result, position, length)
        self._log = log

    def _settle(self, commit: bool) -> None:
        if self._log is not None:
            self._log._complete_claim(self, commit)


class PublicationLog:
    """One stream session: appender, sinks and flow control, shared by its publication handles."""

    def __init__(self, driver: PublicationOwner, channel: ChannelUri, channel_str: str, stream_id: int, session_id: int,
                 initial_term_id: int, term_length: int, mtu: int, window: int, start_position: int,
                 exclusive: bool, registration_id: int, source_identity: str) -> None:
        self.driver = driver
        self.channel = channel
        self.channel_str = channel_str
        self.stream_id = stream_id
        self.session_id = session_id
        self.initial_term_id = initial_term_id
        self.term_length = term_length
        self.mtu = mtu
        self.window = window
        self.exclusive = exclusive
        self.registration_id = registration_id
        self.source_identity = source_identity
        self.response_correlation_id = int(channel.get("response-correlation-id") or 0)
        self.appender = TermAppender(term_length, initial_term_id, mtu, start_position)
        self.max_message_length = max_message_length(term_length)
        self.sinks: list[Sink] = []
        self.destinations: list[str] = []
        self.lock = threading.Lock()
        self.closed = False
        self.refs = 0
        self._limit = start_position
        self._pending: deque[BufferClaim | list[Frame]] = deque()
        self._values = driver.counters.shard()  # written under self.lock only

    # --- sinks -----------------------------------------------------------------------------------
    def add_sink(self, sink: Sink) -> None:
        """Start delivering to `sink` (which joins at the current tail)."""
        self.sinks = [*self.sinks, sink]

    def remove_sink(self, sink: object) -> None:
        """Stop delivering to `sink`."""
        self.sinks = [s for s in self.sinks if s is not sink]

    def compute_limit(self) -> int:
        """min(sink positions) + window, or the last limit when nothing is connected."""
        sinks = self.sinks
        if sinks:
            self._limit = min(s.position for s in sinks) + self.window
        return self._limit

    # --- appending -------------------------------------------------------------------------------
    def offer(self, data: bytes, reserved_value: int = 0) -> int:
        """Append a message; the new position or a negative PublicationResult."""
        length = len(data)
        with self.lock:
            app = self.appender
            position = app.tail
            aligned = (length + HEADER_LENGTH + 31) & -32
            if (position < self._limit and length <= app.max_payload and self.sinks and not self._pending
                    and (position & app.mask) + aligned <= app.term_length and position + aligned <= app.max_position
                    and not self.closed):
                # the common case, inlined: one unfragmented frame that fits the term and the window
                frames = [_new_frame(Frame, (position, app.term_id_at(position), position & app.mask, UNFRAGMENTED,
                                             HDR_TYPE_DATA, reserved_value, length + HEADER_LENGTH, data))]
                app.tail = position + aligned
                for sink in self.sinks:
                    sink.deliver(frames)
                values = self._values
                values["messages_sent"] += 1
                values["bytes_sent"] += aligned
                return app.tail
            status = self._check(position, len(data))
            if status:
                return status
            frames = self.appender.append(data, reserved_value)
            self._publish(frames)
            values = self._values
            values["messages_sent"] += 1
            values["bytes_sent"] += self.appender.tail - position
            return self.appender.tail

    def _check(self, position: int, length: int) -> int:
        if self.closed:
            return CLOSED
        if length > self.max_message_length:
            raise MessageTooLongError(f"message of {length} bytes exceeds max_message_length "
                                      f"{self.max_message_length}")
        if not self.sinks:
            self._values["not_connected_events"] += 1
            return NOT_CONNECTED
        if position >= self._limit and position >= self.compute_limit():
            self._values["back_pressure_events"] += 1
            return BACK_PRESSURED
        required = self.appender.required(length)
        if position + required > self.appender.max_position:
            return MAX_POSITION_EXCEEDED
        pad = self.appender.pad_if_needed(required)
        if pad is not None:
            self._publish([pad])
            self._values["admin_actions"] += 1
            return ADMIN_ACTION
        return 0

    def try_claim(self, length: int) -> BufferClaim:
        """Reserve one unfragmented frame of `length` payload bytes."""
        if length > self.mtu - HEADER_LENGTH:
            raise MessageTooLongError(f"claim of {length} bytes exceeds max_payload_length {self.mtu - HEADER_LENGTH}")
        with self.lock:
            position = self.appender.tail
            status = self._check(position, length)
            if status:
                return BufferClaim(None, status)
            self.appender.tail = position + ((HEADER_LENGTH + length + 31) & ~31)
            claim = BufferClaim(self, self.appender.tail, position, length)
            self._pending.append(claim)
            return claim

    def _complete_claim(self, claim: BufferClaim, commit: bool) -> None:
        with self.lock:
            claim.committed = commit
            if commit:
                self._values["messages_sent"] += 1
                self._values["bytes_sent"] += claim.result - claim.position
            self._flush()

    def _flush(self) -> None:
        pending = self._pending
        while pending:
            head = pending[0]
            if isinstance(head, BufferClaim):
                if head.is_open:
                    return
                pending.popleft()
                self._deliver([self._claim_frame(head)])
            else:
                pending.popleft()
                self._deliver(head)

    def _claim_frame(self, claim: BufferClaim) -> Frame:
        pos = claim.position
        term_id = term_id_of(pos, self.appender.bits, self.initial_term_id)
        offset = pos & (self.term_length - 1)
        if not claim.committed:
            return Frame(pos, term_id, offset, BEGIN_FLAG | END_FLAG, HDR_TYPE_PAD, 0, claim.result - pos, b"")
        return Frame(pos, term_id, offset, BEGIN_FLAG | END_FLAG, HDR_TYPE_DATA, claim.reserved_value,
                     HEADER_LENGTH + claim.length, bytes(claim.buffer))

    def _publish(self, frames: list[Frame]) -> None:
        if self._pending:
            self._pending.append(frames)
        else:
            self._deliver(frames)

    def _deliver(self, frames: list[Frame]) -> None:
        for sink in self.sinks:
            sink.deliver(frames)

    def close(self) -> None:
        """Abort open claims, deliver what is pending, then end the stream at every sink."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            for item in self._pending:
                if isinstance(item, BufferClaim) and item.is_open:
                    item.is_open = False
                    item.committed = False
            self._flush()
            final = self.appender.tail
            sinks, self.sinks = self.sinks, []
            self.driver.counters.retire(self._values)
        for sink in sinks:
            sink.end_of_stream(final)


class Publication:
    """A handle on a stream session for sending (Aeron's ConcurrentPublication: thread safe)."""

    exclusive = False

    def __init__(self, log: PublicationLog, registration_id: int) -> None:
        self._log = log
        self.registration_id = registration_id
        self._closed = False

    # --- sending ---------------------------------------------------------------------------------
    def offer(self, data: bytes | bytearray | memoryview, offset: int = 0, length: int | None = None) -> int:
        """Append a message: the new stream position (> 0) or a `PublicationResult` code (< 0).

        Raises MessageTooLongError beyond `max_message_length`.
        """
        if self._closed:
            return CLOSED
        if offset or length is not None:
            data = bytes(memoryview(data)[offset : offset + (len(data) - offset if length is None else length)])
        elif not isinstance(data, bytes):
            data = bytes(data)
        return self._log.offer(data)

    def try_claim(self, length: int) -> BufferClaim:
        """Claim `length` bytes (at most `max_payload_length`) to fill in place; use as a context manager."""
        if self._closed:
            return BufferClaim(None, CLOSED)
        return self._log.try_claim(length)

    async def send(self, data: bytes | bytearray | memoryview, timeout: float | None = None) -> int:
        """Offer, retrying NOT_CONNECTED, BACK_PRESSURED and ADMIN_ACTION with a backing-off idle.

        Returns the new position; raises PublicationClosedError when closed, TimeoutError after
        `timeout` seconds, OverflowError at MAX_POSITION_EXCEEDED.
        """
        payload = bytes(data)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        idle = 0
        while True:
            result = self.offer(payload)
            if result > 0:
                return result
            if result == CLOSED:
                raise PublicationClosedError(f"publication {self.session_id}/{self.stream_id} is closed")
            if result == MAX_POSITION_EXCEEDED:
                raise OverflowError("publication reached its maximum position")
            if deadline is not None and loop.time() >= deadline:
                raise TimeoutError(f"offer still {PublicationResult(result).name} after {timeout}s")
            idle += 1
            await asyncio.sleep(0 if idle < 16 else min(0.001 * (idle - 15), 0.01))

    # --- multi-destination-cast ------------------------------------------------------------------
    def add_destination(self, endpoint_channel: str) -> None:
        """Manual MDC: also send to the subscriptions at `endpoint_channel`'s endpoint."""
        self._log.driver.add_destination(self._log, endpoint_channel)

    def remove_destination(self, endpoint_channel: str) -> None:
        """Manual MDC: stop sending to that endpoint (its images become unavailable)."""
        self._log.driver.remove_destination(self._log, endpoint_channel)

    # --- state -----------------------------------------------------------------------------------
    @property
    def channel(self) -> str:
        """The channel string as given."""
        return self._log.channel_str

    @property
    def stream_id(self) -> int:
        """Stream id."""
        return self._log.stream_id

    @property
    def session_id(self) -> int:
        """Session id (shared by concurrent publications on the same channel and stream)."""
        return self._log.session_id

    @property
    def initial_term_id(self) -> int:
        """Term id at position 0."""
        return self._log.initial_term_id

    @property
    def term_buffer_length(self) -> int:
        """Term length."""
        return self._log.term_length

    @property
    def mtu(self) -> int:
        """Maximum frame length."""
        return self._log.mtu

    @property
    def max_payload_length(self) -> int:
        """Largest payload carried in one frame: mtu - 32."""
        return self._log.mtu - HEADER_LENGTH

    @property
    def max_message_length(self) -> int:
        """Largest message `offer` accepts."""
        return self._log.max_message_length

    @property
    def max_possible_position(self) -> int:
        """Position at which offers return MAX_POSITION_EXCEEDED."""
        return self._log.appender.max_position

    @property
    def position(self) -> int:
        """Current tail position (CLOSED once closed)."""
        return CLOSED if self._closed else self._log.appender.tail

    @property
    def position_limit(self) -> int:
        """Position beyond which offers are back pressured."""
        return CLOSED if self._closed else self._log.compute_limit()

    @property
    def is_connected(self) -> bool:
        """At least one subscriber image (or remote destination) receives this stream."""
        return not self._closed and bool(self._log.sinks)

    @property
    def is_closed(self) -> bool:
        """Closed by this handle or by the driver."""
        return self._closed or self._log.closed

    @property
    def destinations(self) -> list[str]:
        """Manually added destinations."""
        return list(self._log.destinations)

    def close(self) -> None:
        """Release this handle; the stream ends when its last handle closes."""
        if not self._closed:
            self._closed = True
            self._log.driver.release_publication(self._log)

    def __enter__(self) -> Publication:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(channel={self.channel!r}, stream_id={self.stream_id}, "
                f"session_id={self.session_id}, position={self.position})")


class ExclusivePublication(Publication):
    """A publication with a session of its own (never shared): for a single sending thread."""

    exclusive = True


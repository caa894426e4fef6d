# An Image is one publication session as seen by one subscription: an ordered queue of frames
# pushed by the source (an in-process publication, or a driver task reading an Aqueduct Receiver)
# and consumed by poll().  Its `position` is the subscriber position the source uses for flow
# control, so a subscriber that stops polling stops the publisher after one window, and the queue
# never holds more than a window (plus one message).  Lifecycle: live -> end of stream (the source
# closed; data before it is still delivered) -> closed once drained; or live -> closed at once when
# the source is lost.  Closing queues the subscription's unavailable-image event.
"""`Image`: a subscription's view of one publication session."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Protocol

from .codes import HDR_TYPE_PAD, Action
from .header import Header
from .logbuffer import Frame

FragmentHandler = Callable[[memoryview, Header], object]
ControlledFragmentHandler = Callable[[memoryview, Header], Action]


class ImageSource(Protocol):
    """What feeds an image: told when the image goes away so it stops counting it for flow control."""

    def remove_sink(self, sink: object) -> None:
        """Forget `sink`."""


class ImageOwner(Protocol):
    """The subscription an image belongs to: counts its bytes and hears when it closes."""

    stream_id: int
    _counts: dict[str, int]

    def _image_closed(self, image: Image) -> None:
        """`image` closed: queue the unavailable-image event."""


class Image:
    """Frames of one (stream, session) for one subscription, with its own position and poll."""

    def __init__(self, subscription: ImageOwner, session_id: int, initial_term_id: int, term_length: int,
                 join_position: int, source_identity: str, correlation_id: int, source: ImageSource | None,
                 response_correlation_id: int = 0) -> None:
        self.subscription = subscription
        self.session_id = session_id
        self.stream_id = subscription.stream_id
        self.initial_term_id = initial_term_id
        self.term_length = term_length
        self.join_position = join_position
        self.position = join_position
        self.source_identity = source_identity
        self.correlation_id = correlation_id
        self.response_correlation_id = response_correlation_id
        self._source = source
        self._frames: deque[Frame] = deque()
        self._header = Header(session_id, self.stream_id, initial_term_id, term_length)
        self._eos_position: int | None = None
        self.is_closed = False
        self._values = subscription._counts  # bytes_received: written by the polling thread only
        self._consumed_hook: Callable[[], None] | None = None
        self._report_at = 0

    # --- the source side ---------------------------------------------------------------------------
    def deliver(self, frames: list[Frame]) -> None:
        """Append frames (called by the source, in stream order); frames from before the join are dropped."""
        if not self.is_closed:
            if frames[0][0] < self.join_position:  # a claim that was pending when this image joined
                frames = [f for f in frames if f[0] >= self.join_position]
            self._frames.extend(frames)

    def end_of_stream(self, final_position: int) -> None:
        """The source closed at `final_position`: deliver what is queued, then close."""
        self._eos_position = final_position
        self._close_if_drained()

    def lost(self) -> None:
        """The source vanished (connection lost, destination removed, liveness timeout): close now."""
        self._frames.clear()
        self._close(notify_source=False)

    @property
    def connected(self) -> bool:
        """Still counted by the source."""
        return not self.is_closed

    # --- the subscriber side -----------------------------------------------------------------------
    @property
    def is_end_of_stream(self) -> bool:
        """The source closed and everything it sent has been consumed."""
        return self._eos_position is not None and self.position >= self._eos_position

    @property
    def end_of_stream_position(self) -> int | None:
        """Where the stream ends, once known."""
        return self._eos_position

    def poll(self, handler: FragmentHandler, fragment_limit: int) -> int:
        """Give up to `fragment_limit` fragments to `handler`; returns how many were given."""
        frames, header, count, start = self._frames, self._header, 0, self.position
        try:
            while count < fragment_limit and frames:
                frame = frames.popleft()
                self.position = frame[0] + ((frame[6] + 31) & -32)
                if frame[4] == HDR_TYPE_PAD:
                    continue
                header._frame = frame
                count += 1
                handler(memoryview(frame[7]), header)
        finally:
            self._after_poll(start)
        return count

    def controlled_poll(self, handler: ControlledFragmentHandler, fragment_limit: int) -> int:
        """Like `poll`, but the handler's `Action` decides: ABORT redelivers, BREAK stops, COMMIT/CONTINUE go on."""
        frames, header, count, start = self._frames, self._header, 0, self.position
        try:
            while count < fragment_limit and frames:
                frame = frames[0]
                if frame.frame_type == HDR_TYPE_PAD:
                    frames.popleft()
                    self.position = frame.next_position
                    continue
                header._frame = frame
                action = handler(memoryview(frame.payload), header)
                if action == Action.ABORT:
                    break
                frames.popleft()
                self.position = frame.next_position
                count += 1
                if action == Action.BREAK:
                    break
        finally:
            self._after_poll(start)
        return count

    def _after_poll(self, start: int) -> None:
        self._values["bytes_received"] += self.position - start
        if self._consumed_hook is not None and self.position >= self._report_at:
            self._consumed_hook()
        if self._eos_position is not None:
            self._close_if_drained()

    @property
    def available(self) -> int:
        """Fragments queued and not yet polled (padding included)."""
        return len(self._frames)

    def _close_if_drained(self) -> None:
        if not self._frames and self._eos_position is not None and self.position >= self._eos_position:
            self._close(notify_source=True)

    def _close(self, notify_source: bool) -> None:
        if self.is_closed:
            return
        self.is_closed = True
        if notify_source and self._source is not None:
            self._source.remove_sink(self)
        self._source = None
        self.subscription._image_closed(self)

    def close(self) -> None:
        """Called when the subscription goes away: stop counting for flow control."""
        if self.is_closed:
            return
        self.is_closed = True
        self._frames.clear()
        if self._source is not None:
            self._source.remove_sink(self)
        self._source = None

    def __repr__(self) -> str:
        return (f"Image(session_id={self.session_id}, stream_id={self.stream_id}, position={self.position}, "
                f"source={self.source_identity!r}, closed={self.is_closed})")

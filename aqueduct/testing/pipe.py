"""One direction of one simulated QUIC stream: ordered bytes under a receive window.

Writes append segments that become deliverable at their arrival time, never
before an earlier segment (the stream is ordered). The simulator takes
chunks from the front, up to the flow-control limit, unless the pipe is
held or blocked by the stream limit. A FIN is deliverable once every byte is; a reset first truncates the
undelivered bytes to a prefix the simulator chose, and is delivered after
that prefix, no earlier than its own arrival time.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass
class _Segment:
    ready: float
    data: bytearray


class StreamPipe:
    """The sending side's view of one stream direction in flight."""

    def __init__(self, stream_id: int, window: int | None) -> None:
        self.stream_id = stream_id
        self.limit: int | None = window
        """Highest byte offset the receiver allows (None: no flow control)."""
        self.written = 0
        self.delivered = 0
        self.fin_written = False
        self.fin_ready = 0.0
        self.fin_delivered = False
        self.reset_code: int | None = None
        self.reset_ready = 0.0
        self.reset_delivered = False
        self.held = False
        """A script froze this direction (hold_stream)."""
        self.blocked = False
        """The peer's stream limit does not allow this stream yet (QUIC MAX_STREAMS)."""
        self._segments: deque[_Segment] = deque()
        self._last_ready = 0.0

    @property
    def closed_for_writing(self) -> bool:
        """Whether the sender already finished or reset this direction."""
        return self.fin_written or self.reset_code is not None

    @property
    def done(self) -> bool:
        """Whether the receiver has seen the end (FIN or reset)."""
        return self.fin_delivered or self.reset_delivered

    @property
    def undelivered(self) -> int:
        """Bytes written but not yet delivered."""
        return self.written - self.delivered

    @property
    def window_blocked(self) -> int:
        """Bytes written that the receive window does not allow yet."""
        if self.limit is None:
            return 0
        return max(0, self.written - max(self.limit, self.delivered))

    def write(self, data: bytes, ready: float, fin: bool) -> float:
        """Queue bytes (and maybe FIN) that arrive at `ready`; return that time, clamped to keep order."""
        ready = max(ready, self._last_ready)
        self._last_ready = ready
        if data:
            self._segments.append(_Segment(ready, bytearray(data)))
            self.written += len(data)
        if fin:
            self.fin_written = True
            self.fin_ready = ready
        return ready

    def reset(self, code: int, ready: float, keep: int) -> float:
        """The sender reset: only the first `keep` undelivered bytes may still arrive; return when the reset does."""
        self.reset_code = code
        self.reset_ready = max(ready, self._last_ready)
        self.fin_written = False
        drop = self.undelivered - keep
        while drop > 0 and self._segments:
            last = self._segments[-1]
            cut = min(drop, len(last.data))
            del last.data[len(last.data) - cut :]
            drop -= cut
            self.written -= cut
            if not last.data:
                self._segments.pop()
        return self.reset_ready

    def deliverable(self, now: float) -> int:
        """How many bytes could be delivered at `now`."""
        if self.held or self.blocked:
            return 0
        room = self.undelivered if self.limit is None else self.limit - self.delivered
        total = 0
        for seg in self._segments:
            if seg.ready > now or total >= room:
                break
            total += len(seg.data)
        return max(0, min(total, room))

    def end_due(self, now: float) -> bool:
        """Whether the FIN or reset can be delivered now (all bytes before it are)."""
        if self.held or self.blocked or self.undelivered or self.done:
            return False
        if self.reset_code is not None:
            return self.reset_ready <= now
        return self.fin_written and self.fin_ready <= now

    def take(self, n: int) -> bytes:
        """Remove and return the next `n` bytes."""
        out = bytearray()
        while len(out) < n:
            seg = self._segments[0]
            part = seg.data[: n - len(out)]
            out += part
            del seg.data[: len(part)]
            if not seg.data:
                self._segments.popleft()
        self.delivered += n
        return bytes(out)

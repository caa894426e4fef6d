"""Per-stream state of a bymux endpoint (spec Appendix A).

Theory of operation: a stream is active from creation until this endpoint
has both sent and received Close and StopRead; the four flags say which. It
holds two credits: `send_credit` (what we may still write) and `recv_credit`
(what the peer may still write to us, i.e. what we granted and it has not yet
used). Outgoing data waits in `outbox` for the round-robin scheduler; a local
close waits there too (`close_pending`) so that it follows the data. Data in
the outbox has already consumed send credit, so the outbox never holds more
than the peer allowed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

# What `summary()` shows of a stream or of the global state: the credits and the four handshake flags.
_SUMMARY_FIELDS = ("send_credit", "recv_credit", "sent_close", "sent_stop_read", "received_close", "received_stop_read")


def _summary(state: StreamState | GlobalState) -> dict[str, int | bool]:
    summary: dict[str, int | bool] = {name: getattr(state, name) for name in _SUMMARY_FIELDS}
    return summary


@dataclass
class StreamState:
    """Everything an endpoint knows about one active stream."""

    stream_id: int
    send_credit: int
    recv_credit: int
    sent_close: bool = False
    sent_stop_read: bool = False
    received_close: bool = False
    received_stop_read: bool = False
    close_pending: bool = False
    outbox: deque[memoryview] = field(default_factory=deque)
    queued: int = 0

    @property
    def ended(self) -> bool:
        """Close and StopRead both sent and received: the state may go."""
        return self.sent_close and self.sent_stop_read and self.received_close and self.received_stop_read

    @property
    def has_output(self) -> bool:
        """Whether the scheduler has a Write or a Close to emit for this stream."""
        return self.queued > 0 or self.close_pending

    def push(self, data: bytes) -> None:
        """Queue bytes to write."""
        self.outbox.append(memoryview(data))
        self.queued += len(data)

    def take(self, limit: int) -> bytes:
        """Remove and return up to `limit` queued bytes."""
        parts: list[memoryview] = []
        want = limit
        while want and self.outbox:
            head = self.outbox[0]
            if len(head) <= want:
                parts.append(self.outbox.popleft())
                want -= len(head)
            else:
                parts.append(head[:want])
                self.outbox[0] = head[want:]
                want = 0
        data = b"".join(parts)
        self.queued -= len(data)
        return data

    def drop_output(self) -> None:
        """Forget queued bytes (the peer will not read them)."""
        self.outbox.clear()
        self.queued = 0

    def summary(self) -> dict[str, int | bool]:
        """The spec-visible state, for vectors and tests."""
        return _summary(self)


@dataclass
class GlobalState:
    """The connection-wide half of Appendix A: global credit and the global handshake."""

    send_credit: int = 0
    recv_credit: int = 0
    sent_close: bool = False
    sent_stop_read: bool = False
    received_close: bool = False
    received_stop_read: bool = False

    def summary(self) -> dict[str, int | bool]:
        """The spec-visible state, for vectors and tests."""
        return _summary(self)

"""Our writes to aioquic, and the unacknowledged bytes send backpressure reads.

Joining: consecutive writes to one stream are held back and handed to
aioquic joined (a FIN ends the run and rides on it) before any other
command and before each transmit (protocol.py calls `write_held`):
aioquic's per-write cost (~1-2 us) is paid once per stream per loop turn
instead of once per message, and a channel's last message and its finish
are one write. A write that opens and ends a stream at once (an unordered
message) goes straight to aioquic. Held bytes count as unacked, so
backpressure sees them at once.

Backpressure: a send waits while its stream's unacked bytes (aioquic's
send buffer plus what is held here) are at `send_buffer`, or the
connection's at `connection_send_buffer`, or (a datagram) while aioquic
queues DATAGRAM_QUEUE_LIMIT datagrams. Summing every stream on each send
would make a send cost grow with the open channels, so the connection
check keeps an upper bound (`unacked_upper`): our writes grow it, acks
(which only shrink buffers) leave it, and only a bound at or over the
limit is replaced by the sum.

StreamWrites owns these counters and the held writes; the protocol
(protocol.py) owns when they are flushed and who waits.
"""

from __future__ import annotations

import logging
from collections import deque

from aioquic.quic.connection import QuicConnection

from . import introspect
from .settings import TransportSettings

log = logging.getLogger("aqueduct.quic")

DATAGRAM_QUEUE_LIMIT = 64
"""Datagrams queued inside aioquic before an unreliable send waits (aioquic's queue is unbounded)."""


class StreamWrites:
    """One connection's writes to aioquic, joined per stream, and its unacked-bytes accounting."""

    __slots__ = ("_held", "_settings", "datagrams_queued", "held_bytes", "held_sid", "quic", "unacked_upper",
                 "unsent")

    def __init__(self, quic: QuicConnection, settings: TransportSettings) -> None:
        self.quic = quic
        self._settings = settings
        self.held_sid: int | None = None
        """The stream whose writes are held back, if any."""
        self._held: list[bytes] = []
        self.held_bytes = 0
        self.unacked_upper = 0
        """At least the connection's unacknowledged bytes (see connection_blocked)."""
        self.unsent = 0
        """Bytes written since the last transmit (protocol.py's TRANSMIT_EARLY)."""
        self.datagrams_queued: deque[bytes] = introspect.datagrams_pending(quic)
        """aioquic's queue of datagrams not yet in a packet (unbounded: senders wait at DATAGRAM_QUEUE_LIMIT)."""

    # ---- writes ----
    def datagram(self, data: bytes) -> None:
        """Send a datagram (held stream writes go first)."""
        self.unsent += len(data)
        if self.held_sid is not None:
            self.write_held()
        self.quic.send_datagram_frame(data)

    def stream(self, sid: int, data: bytes, end_stream: bool) -> None:
        """Write to a stream: held back to join the next writes to it, unless it opens and ends a stream."""
        n = len(data)
        self.unacked_upper += n
        self.unsent += n
        if self.held_sid != sid:
            self.write_held()
            if end_stream:
                self._send_stream_data(sid, data, True)
                return
            self.held_sid = sid
        self._held.append(data)
        self.held_bytes += n
        if end_stream:
            self.write_held(end_stream=True)

    def write_held(self, *, end_stream: bool = False) -> None:
        """Hand the held-back writes of one stream to aioquic as one write (with a FIN if `end_stream`)."""
        sid = self.held_sid
        if sid is None:
            return
        held = self._held
        data = held[0] if len(held) == 1 else b"".join(held)
        self.held_sid, self._held, self.held_bytes = None, [], 0
        self._send_stream_data(sid, data, end_stream)

    def _send_stream_data(self, sid: int, data: bytes, end_stream: bool) -> None:
        try:
            self.quic.send_stream_data(sid, data, end_stream)
        except (ValueError, AssertionError) as exc:
            # The stream is already gone at the QUIC level (e.g. the peer reset it): nothing to write to.
            log.debug("dropped a write to stream %d: %s", sid, exc)

    # ---- backpressure ----
    def unacked(self, stream_id: int) -> int:
        """Bytes written to a stream and not yet acknowledged."""
        held = self.held_bytes if stream_id == self.held_sid else 0
        return held + introspect.stream_unacked(self.quic, stream_id)

    def unacked_total(self) -> int:
        """Bytes written and not yet acknowledged, over all streams (sums every stream)."""
        total = introspect.unacked_total(self.quic) + self.held_bytes
        self.unacked_upper = total
        return total

    def connection_blocked(self) -> bool:
        """Whether the connection's unacknowledged bytes are over `connection_send_buffer` (see the docstring)."""
        limit = self._settings.connection_send_buffer
        return self.unacked_upper >= limit and self.unacked_total() >= limit

    def new_stream_blocked(self) -> bool:
        """Whether a send that opens a stream must wait: the connection bound, or aioquic already holds a new
        stream the peer's MAX_STREAMS does not allow yet (unbounded, they would pile up, and aioquic walks
        every stream it holds on every packet: sends that open streams got slower the more were waiting)."""
        return introspect.new_streams_waiting(self.quic) or self.connection_blocked()

    def send_blocked(self, stream_id: int | None) -> bool:
        """Whether a send to `stream_id` (None: a datagram) must wait for the peer."""
        if stream_id is None:
            return len(self.datagrams_queued) >= DATAGRAM_QUEUE_LIMIT
        # (`unacked(stream_id) >= send_buffer or connection_blocked()`, inline: two checks per message send)
        unacked = introspect.stream_unacked(self.quic, stream_id)
        if stream_id == self.held_sid:
            unacked += self.held_bytes
        settings = self._settings
        if unacked >= settings.send_buffer:
            return True
        limit = settings.connection_send_buffer
        return self.unacked_upper >= limit and self.unacked_total() >= limit

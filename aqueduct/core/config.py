"""Engine configuration: every limit and timing in one place, with defaults.

Limits bound what a peer can make us hold; exceeding one closes the
connection with CloseCode.LIMIT_EXCEEDED (peer-driven) or raises
LimitExceeded to the application (locally driven). Times are seconds.

Spec: none (the limits and timings the spec leaves to implementations; SECURITY.md lists the bounds).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..wire.headers import DEFAULT_HEADER_LIMITS, HeaderLimits
from ..wire.reader import DEFAULT_MAX_FRAME_SIZE


@dataclass(frozen=True)
class EngineConfig:
    """Limits and timings of one connection engine."""

    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    """Largest frame (and so message payload) accepted or sent."""
    max_header_bytes: int = DEFAULT_HEADER_LIMITS.total_bytes
    """The peer's encoded header data (its ConnectionControl) at most: a larger declared length closes the
    connection (LIMIT_EXCEEDED) as soon as it arrives, before its bytes are buffered or `authenticate` runs."""
    max_headers: int = DEFAULT_HEADER_LIMITS.count
    """Key/value pairs in the peer's header data at most (LIMIT_EXCEEDED past it, while reading)."""
    max_header_name_bytes: int = DEFAULT_HEADER_LIMITS.name_bytes
    """One header key of the peer's at most (LIMIT_EXCEEDED)."""
    max_header_value_bytes: int = DEFAULT_HEADER_LIMITS.value_bytes
    """One header value of the peer's at most (LIMIT_EXCEEDED); the `schema` header is the largest we send."""
    max_schema_depth: int = 64
    """Nesting of the peer's `schema` header (JSON arrays and objects) at most, checked before it is parsed:
    deeper closes the connection with SCHEMA_MISMATCH (api/schema.py; its size is max_header_value_bytes)."""
    max_channels: int = 100_000
    """Senders plus receivers alive at once on this connection."""
    max_pending_receivers: int = 10_000
    """Auto-created receivers still waiting for the message that creates their channel."""
    max_receiver_queue_messages: int = 10_000
    """Messages queued in one receiver, not yet taken by the application."""
    max_receiver_queue_bytes: int = 16 * 1024 * 1024
    """Payload bytes queued in one receiver, not yet taken by the application."""
    max_receiver_queue_halves: int = 1024
    """Halves (channels) carried by the messages queued in one receiver, not yet taken by the application: each
    holds a channel's engine state (its records and control stream, ~2.3 KB) for a few bytes of frame, so past
    this the stream stalls (backpressure, as for a full queue) with the rest of its frames unprocessed. A message
    reaching an empty queue is queued whatever it carries."""
    max_buffered_bytes: int = 64 * 1024 * 1024
    """Bytes held across the connection: partial frames, early frames held before headers or handshake."""
    max_ack_ranges: int = 4096
    """Ranges of message numbers one receiver may hold for its acks (gaps left by the peer); past it a reliable
    channel closes the connection (LIMIT_EXCEEDED), an unreliable one nacks its oldest gaps."""
    max_ack_ranges_per_connection: int = 65_536
    """The same summed over every receiver of the connection (past it: LIMIT_EXCEEDED)."""
    partial_frame_timeout: float = 30.0
    """A peer's stream must complete each frame within this many seconds of the frame's first byte (a new
    stream: of its opening), else the connection closes with LIMIT_EXCEEDED (a frame dripped byte by byte)."""
    held_item_overhead: int = 64
    """Bytes counted for every buffered item on top of its payload wherever a byte limit applies (held events,
    queued messages), so empty datagrams or messages cannot be held for free."""
    max_datagram_payload: int = 1100
    """Largest encoded datagram the transport can carry; bigger unreliable sends are refused."""
    sent_unreliable_delay: float = 0.1
    """SentUnreliable goes out within min(this, RTT/2) of sending."""
    ack_delay: float = 0.05
    """Acks are batched for at most this long (spec: within 1 s)."""
    ack_on_take: bool = False
    """A reliable message is owed its ack when the application takes it (`Engine.take_message`/`take_many`),
    not when it is queued, and one it refuses at once (`Engine.refuse`) is nacked when its receiver closes
    (acks.py). The API turns it on, so that a confirmed send means the receiving application took the message
    and its type check passed (decision API-34); off, the engine acks what it queued (the conformance vectors)."""
    nack_timeout: float = 1.0
    """Unreliable messages missing this long after their SentUnreliable (or 2*RTT, whichever is larger) are nacked."""
    discarded_filter_size: int = 4096
    """Remembered recently-discarded receiver channel IDs (drop late messages, no ghosts)."""
    initial_rtt: float = 0.1
    """RTT estimate before the transport reports one."""
    hold_until_accepted: bool = False
    """Server only: after the client's headers, hold everything else of it (bounded by max_buffered_bytes) and
    send nothing until `Engine.accept_peer()`: an authentication callback decides meanwhile (api/auth.py)."""
    replay_safe_0rtt: bool = False
    """Server only: 0-RTT data may be processed before the handshake completes (replay proven impossible)."""

    @property
    def header_limits(self) -> HeaderLimits:
        """The max_header_* caps as the wire reads them."""
        return HeaderLimits(self.max_header_bytes, self.max_headers, self.max_header_name_bytes,
                            self.max_header_value_bytes)

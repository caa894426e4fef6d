"""Every tunable and every per-peer bound of the Stream endpoint, in one frozen config.

Theory: hostile input can only grow state that is counted against one of these
limits; the engine checks them where state is created and `state_sizes()`
reports the current counts. Times are integer nanoseconds (the engine never
reads a clock; callers pass `now`).
"""

from __future__ import annotations

from dataclasses import dataclass

MS = 1_000_000


@dataclass(frozen=True, slots=True)
class StreamConfig:
    """Limits and timers; defaults suit loopback and LAN."""

    max_payload: int = 1350  # DATA bytes per packet
    max_connections: int = 1024  # per endpoint, established or half-open
    max_half_open: int = 256  # per endpoint, DIAL received but not confirmed (when full, the oldest gives way)
    max_half_open_per_source: int = 32  # of those, per source address (when full, its own oldest gives way)
    max_streams: int = 1024  # per connection, either side's, live (a finished stream leaves)
    max_stream_id_ranges: int = 256  # per connection and direction: runs of stream ids used (finished ids stay used)
    recv_window: int = 4 << 20  # per stream: unread + out-of-order bytes accepted
    recv_connection_window: int = 8 << 20  # per connection: unread + out-of-order bytes of all its streams
    max_recv_chunks: int = 8192  # per stream: out-of-order fragments held
    send_buffer: int = 8 << 20  # per connection: bytes queued by the application, not yet sent
    max_ack_ranges: int = 128  # received-packet ranges remembered (oldest forgotten)
    ack_delay_ns: int = 10 * MS  # periodic ACK
    ack_repeat_ns: int = 2 * MS  # the last ACK again after this long without another (0: never)
    ack_every: int = 2  # ACK at once after this many in-order packets
    loss_delay_ns: int = 50 * MS  # lost = sent this long before the largest acked
    reorder_threshold: int = 3  # data of a packet this many below the largest acked is resent at once
    min_tlp_ns: int = 25 * MS  # tail-loss timer floor (above ack_delay_ns: a delayed ACK is not a tail loss)
    handshake_retry_ns: int = 200 * MS  # first DIAL/DIALCONF retransmission, doubling (6 tries: 12.6 s)
    handshake_tries: int = 6
    idle_timeout_ns: int = 15_000 * MS
    initial_cwnd_packets: int = 32
    max_queue_delay_ns: int = 10 * MS  # the window stops growing while the RTT is this far above the least
    peer_max_ack_delay_ns: int = 25 * MS  # the most a peer holds an ACK back (OpenWeaver's timer; QUIC's default)
    max_cwnd: int = 4 << 20  # congestion window ceiling in bytes (one stream's receive window: more is refused)
    min_cwnd_packets: int = 4
    avoidance_growth_packets: int = 4  # congestion avoidance: packets added per window acked (Reno: 1)
    pacing_burst_packets: int = 16
    initial_rtt_ns: int = 50 * MS

"""What the simulated network does: delays, datagram faults, 0-RTT outcome, windows.

A NetConfig is plain data; `NetConfig.random(rng)` draws a hostile but
finite schedule for property tests. Times are seconds of virtual time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class NetConfig:
    """Parameters of the simulated network between the two engines."""

    one_way: float = 0.02
    """Base one-way delay; the RTT reported to engines is twice this."""
    jitter: float = 0.01
    """Each stream write and datagram gets an extra uniform [0, jitter] delay."""
    chunk_gap: float = 0.002
    """Pause up to this long between two chunks delivered from the same stream."""
    split_chunks: bool = True
    """Deliver stream bytes in random-sized chunks (False: everything ready at once)."""
    datagram_loss: float = 0.0
    """Probability a datagram is dropped."""
    datagram_dup: float = 0.0
    """Probability a datagram is delivered twice (the copy with its own delay)."""
    datagram_reorder: float = 0.0
    """Probability a datagram gets an extra uniform [0, reorder_delay] delay."""
    reorder_delay: float = 0.05
    late: float = 0.0
    """Probability that a datagram, or a stream write (and so everything after it on that stream), is held up
    for an extra uniform [0, late_delay]: late enough to arrive after nack deadlines and channel ends."""
    late_delay: float = 2.0
    max_datagram_size: int = 1200
    """Bigger datagrams are recorded as misuse and not sent."""
    reset_keep: float = 0.5
    """Probability that a reset stream still delivers all its unread bytes; otherwise a random prefix."""
    zero_rtt: bool = False
    """The client attempts 0-RTT (its early data is sent before the handshake completes)."""
    accept_0rtt: bool = True
    """The server accepts the client's 0-RTT attempt."""
    stream_window: int | None = None
    """Per-stream receive window in bytes, grown only by GrantCredit (None: no flow control)."""
    max_streams: int | None = None
    """QUIC stream limit per side and stream type: stream number n (ID // 4) may carry data once n < limit; the
    limit grows by one as each such stream closes at the peer (both directions ended). None: no limit."""

    @property
    def rtt(self) -> float:
        """The RTT the transport reports to engines."""
        return 2 * self.one_way

    @classmethod
    def random(cls, rng: random.Random, *, loss: float | None = None, flow_control: bool | None = None) -> NetConfig:
        """A random network: delays, faults and the 0-RTT outcome drawn from `rng`."""
        one_way = rng.choice((0.0005, 0.005, 0.02, 0.1))
        if flow_control is None:
            flow_control = rng.random() < 0.25
        return cls(
            one_way=one_way,
            jitter=one_way * rng.choice((0.0, 0.5, 2.0)),
            chunk_gap=rng.choice((0.0, 0.001, 0.01)),
            split_chunks=rng.random() < 0.8,
            datagram_loss=rng.choice((0.0, 0.1, 0.3)) if loss is None else loss,
            datagram_dup=rng.choice((0.0, 0.0, 0.1)),
            datagram_reorder=rng.choice((0.0, 0.2)),
            reorder_delay=one_way * 3,
            late=rng.choice((0.0, 0.0, 0.02, 0.1)),
            reset_keep=rng.random(),
            zero_rtt=rng.random() < 0.5,
            accept_0rtt=rng.random() < 0.5,
            stream_window=rng.choice((600, 2048, 8192)) if flow_control else None,
            max_streams=rng.choice((None, None, 4, 16)),
        )

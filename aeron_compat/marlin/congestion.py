"""Congestion window and pacing of one Stream connection's sender.

Theory: the window starts in slow start (grow by every acked byte: doubling
per round trip); the first congestion event halves it and switches to
congestion avoidance (grow by one packet per window acked: sublinear). Events
are counted once per round: a loss of a packet sent before the last event
started does not halve again (else one burst loss would collapse the window).
Window growth also stops while the RTT (less the peer's largest ACK delay)
stands `max_queue_delay_ns` above the least seen: the window is then filling a
queue, not the path (a proxy's socket buffers parked the whole 4 MiB window).
Pacing is a token bucket refilled at `gain * cwnd / srtt` (gain 2 in slow
start, 1.25 after), holding at most a burst of packets; `next_send_ns` says
when the next packet may go.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Congestion:
    """cwnd, ssthresh, RTT estimate and the pacing bucket."""

    mss: int
    cwnd: int
    min_cwnd: int
    burst: int
    srtt_ns: int
    max_cwnd: int = 1 << 62
    ssthresh: int = 1 << 62
    recovery_start_ns: int = -1
    tokens: float = 0.0
    last_refill_ns: int = 0
    events: int = 0
    growth: int = 1  # packets added per window acked in congestion avoidance
    granularity_ns: int = 1_000_000  # the timer's: a wait shorter than this lasts this long
    max_queue_delay_ns: int = 0  # no growth while queue_rtt exceeds the least RTT seen by this much (0: off)
    max_ack_delay_ns: int = 0  # how long the peer may hold an ACK back (taken off each sample for queue_rtt)
    min_rtt_ns: int = 1 << 62
    queue_rtt_ns: int = 0  # smoothed RTT less the peer's ACK delay (0: no sample yet)

    def __post_init__(self) -> None:
        self.tokens = float(self.burst * self.mss)

    @property
    def slow_start(self) -> bool:
        return self.cwnd < self.ssthresh

    def on_rtt(self, sample_ns: int) -> None:
        self.srtt_ns = max(1, (7 * self.srtt_ns + sample_ns) // 8)
        self.min_rtt_ns = min(self.min_rtt_ns, max(1, sample_ns))
        # as QUIC's estimator (RFC 9002, 5.3) takes the peer's ACK delay off a sample, never below the least
        # RTT; the wire does not carry the delay, so the most the peer may hold an ACK back is taken off
        adjusted = sample_ns - min(self.max_ack_delay_ns, max(0, sample_ns - self.min_rtt_ns))
        self.queue_rtt_ns = adjusted if not self.queue_rtt_ns else max(1, (7 * self.queue_rtt_ns + adjusted) // 8)

    @property
    def queueing(self) -> bool:
        """The RTT, less the peer's ACK delay, stands `max_queue_delay_ns` above the least one: more window
        only queues. (A delayed-ACK timer inflates every sample by up to its length, queue or not: a peer
        acking every 25 ms used to hold the window at its floor.)"""
        return bool(self.max_queue_delay_ns and self.queue_rtt_ns) and (
            self.queue_rtt_ns > self.min_rtt_ns + self.max_queue_delay_ns)

    def on_acked(self, nbytes: int, sent_ns: int) -> None:
        if sent_ns <= self.recovery_start_ns or self.queueing:
            return
        if self.slow_start:
            self.cwnd = min(self.cwnd + nbytes, self.max_cwnd)
        else:
            self.cwnd = min(self.cwnd + max(1, self.growth * self.mss * nbytes // self.cwnd), self.max_cwnd)

    def on_congestion(self, sent_ns: int, now_ns: int) -> None:
        """A packet sent at `sent_ns` was lost."""
        if sent_ns <= self.recovery_start_ns:
            return
        self.events += 1
        self.recovery_start_ns = now_ns
        self.cwnd = max(self.cwnd // 2, self.min_cwnd)
        self.ssthresh = self.cwnd

    def rate(self) -> float:
        """The pacing rate in bytes per ns."""
        return (2.0 if self.slow_start else 1.25) * self.cwnd / self.srtt_ns

    def capacity(self, rate: float) -> float:
        """The bucket's size: a burst, or two timer granularities' worth at `rate` if that is more.

        A timer fires no sooner than its granularity (asyncio's epoll rounds waits up to 1 ms), so a
        bucket smaller than a granularity's worth caps the rate at bucket / granularity whatever
        the window says (16 packets per ms: about 20 MB/s).
        """
        return max(float(self.burst * self.mss), 2.0 * rate * self.granularity_ns)

    def _refill(self, now_ns: int) -> None:
        rate = self.rate()
        self.tokens = min(self.capacity(rate), self.tokens + rate * (now_ns - self.last_refill_ns))
        self.last_refill_ns = now_ns

    def may_send(self, now_ns: int) -> bool:
        self._refill(now_ns)
        return self.tokens >= self.mss

    def on_sent(self, nbytes: int) -> None:
        self.tokens -= nbytes

    def next_send_ns(self, now_ns: int, packets: int = 1) -> int:
        """When the bucket next holds `packets` full packets (at most half its size).

        Waking for every single packet costs an event-loop turn per packet; waking for up to half
        a bucket at a time keeps the same rate with fewer turns.
        """
        self._refill(now_ns)
        if self.tokens >= self.mss:
            return now_ns
        rate = self.rate()
        need = max(float(self.mss), min(float(packets * self.mss), self.capacity(rate) / 2))
        return now_ns + int((need - self.tokens) / rate) + 1

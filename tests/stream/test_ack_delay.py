"""A peer's delayed ACKs do not starve the window (issue 28 item 7), and a real standing queue still stops it.

OpenWeaver's C++ receiver ACKs only from a 25 ms timer, so every RTT sample carries up to 25 ms of ACK delay;
the check that stops window growth while the RTT stands `max_queue_delay_ns` (10 ms) above the least one read
that as a queue and held the window at its floor. Now the peer's largest ACK delay (`peer_max_ack_delay_ns`)
is taken off each sample first, as QUIC's estimator takes off the delay its ACKs report. The simulator's
receiver here ACKs the same way (a 25 ms timer and no count rule); virtual time only.
"""

from __future__ import annotations

import random

from aeron_compat.marlin.congestion import Congestion
from aeron_compat.marlin.connection import Readable
from aeron_compat.marlin.endpoint import Endpoint
from aeron_compat.marlin.limits import MS, StreamConfig
from tests.stream.simnet import A, B, SimNet


def test_samples_inflated_by_an_ack_timer_are_not_a_queue() -> None:
    cc = Congestion(mss=1000, cwnd=100_000, min_cwnd=4000, burst=16, srtt_ns=MS, max_queue_delay_ns=10 * MS,
                    max_ack_delay_ns=25 * MS)
    rng = random.Random(1)
    for _ in range(200):
        cc.on_rtt(MS // 10 + rng.randrange(25 * MS))  # 0.1 ms path plus 0-25 ms held in the peer's ACK timer
    assert not cc.queueing
    cc.on_acked(1000, 1)
    assert cc.cwnd == 101_000
    for _ in range(40):
        cc.on_rtt(MS // 10 + 25 * MS + 20 * MS)  # and 20 ms of queue on top
    assert cc.queueing


def _transfer(*, loss: float = 0.0, rate: float = 0.0, size: int = 3_000_000,
              receiver: StreamConfig | None = None) -> tuple[float, int, int]:
    """(MB/s in virtual time, largest window in packets, largest smoothed RTT in ms) of one transfer A -> B."""
    net = SimNet(seed=1, loss=loss, delay_ns=MS // 20, rate=rate, timer_granularity_ns=MS)
    sender = StreamConfig()
    a = net.add(A, Endpoint(sender, rng=random.Random(1)))
    b = net.add(B, Endpoint(receiver or sender, listening=True, rng=random.Random(2)))
    c = a.dial(B, 0)
    got = 0
    peak_cwnd = peak_srtt = 0

    def app() -> None:
        nonlocal got, peak_cwnd, peak_srtt
        for conn, ev in b.events():
            if isinstance(ev, Readable):
                got += len(conn.read(ev.stream_id))
        a.events()
        peak_cwnd, peak_srtt = max(peak_cwnd, c.cc.cwnd), max(peak_srtt, c.cc.srtt_ns)

    net.app = app
    net.run_until(lambda: c.state.name == "ESTABLISHED")
    sid = c.open_stream()
    c.send(sid, bytes(size), fin=True)
    start = net.now
    net.run_until(lambda: got >= size)
    return size / ((net.now - start) / 1e9) / 1e6, peak_cwnd // sender.max_payload, peak_srtt // MS


TIMER_ACKS = StreamConfig(ack_every=1 << 30, ack_delay_ns=25 * MS, ack_repeat_ns=0)  # OpenWeaver's ACK rule


def test_a_receiver_acking_every_25_ms_does_not_hold_the_window_down() -> None:
    rate, cwnd, _ = _transfer(receiver=TIMER_ACKS)
    print(f"\n{rate:.1f} MB/s (virtual), window up to {cwnd} packets")
    assert cwnd >= 200  # it stayed at 64 packets (3.3 MB/s virtual) when every delayed ACK read as a queue


def test_a_standing_queue_still_stops_the_window() -> None:
    """A 20 MB/s link with an unbounded queue (a proxy's socket buffers): without the check the window grows to
    3,106 packets and the smoothed RTT to 205 ms; with it (and the ACK-delay allowance) 1,036 packets and 71 ms
    at their peaks (slow start overshoots before the RTT shows the queue; 310 and 50 ms without the allowance)."""
    _, cwnd, srtt_ms = _transfer(rate=20e6, size=8_000_000)
    print(f"\nwindow up to {cwnd} packets, smoothed RTT up to {srtt_ms} ms")
    assert srtt_ms < 120 and cwnd < 1600

"""The sender's rules for speed under loss: holes leave the window, lowest offset resent first, the
peer's window respected and probed, the congestion window's ceiling (specs/DECISIONS.md, Marlin Stream)."""

from __future__ import annotations

from aeron_compat.stream.congestion import Congestion
from aeron_compat.stream.connection import Connection
from aeron_compat.stream.limits import MS, StreamConfig
from aeron_compat.stream.packets import Ack, Data, decode
from tests.stream.helpers import Pair
from tests.stream.simnet import SimNet


def _established(cfg: StreamConfig) -> tuple[Connection, Connection, int]:
    net = SimNet()
    pair = Pair(net, cfg)
    net.run_until(pair.established)
    assert pair.server is not None
    return pair.client, pair.server, net.now


def _data(datagrams: list[bytes]) -> list[Data]:
    return [p for p in (decode(d) for d in datagrams) if isinstance(p, Data)]


def test_packets_below_the_largest_acked_do_not_hold_the_window() -> None:
    cfg = StreamConfig(max_payload=10, initial_cwnd_packets=4, pacing_burst_packets=64)
    c, s, now = _established(cfg)
    sid = c.open_stream()
    c.send(sid, b"x" * 1000)
    assert len(_data(c.poll(now))) == 4  # pns 0-3 fill the window
    c.on_packet(Ack(s.local_id, c.local_id, 3, (3,)), now + MS)  # 1-3 acked, 0 is a hole
    assert c.stats["lost"] == 0 and 0 in c.sent  # not lost yet: the 50 ms rule has not run out
    sent = _data(c.poll(now + MS))
    assert len(sent) == c.cc.cwnd // 10  # the whole window is usable: the hole is off the wire
    assert c.hole_bytes == 10


def test_lost_data_is_resent_lowest_offset_first() -> None:
    cfg = StreamConfig(max_payload=10, pacing_burst_packets=64)
    c, _s, now = _established(cfg)
    sid = c.open_stream()
    c.send(sid, b"x" * 30)
    assert [p.offset for p in _data(c.poll(now))] == [0, 10, 20]
    c._mark_lost(2, now)  # declared in the order 20, 0
    c._mark_lost(0, now)
    assert [p.offset for p in _data(c.poll(now))] == [0, 20]


def test_the_sender_stays_within_the_peers_window_and_probes_its_floor() -> None:
    cfg = StreamConfig(max_payload=10, recv_window=100, pacing_burst_packets=64)
    c, s, now = _established(cfg)
    sid = c.open_stream()
    c.send(sid, b"x" * 1000)
    first = _data(c.poll(now))
    assert [p.offset for p in first] == list(range(0, 100, 10))  # the peer would refuse offset 100
    c.on_packet(Ack(s.local_id, c.local_id, 9, (9,)), now + MS)  # pn 0 (offset 0) a hole: the floor
    assert c.stats["lost"] == 0 and _data(c.poll(now + MS)) == []  # blocked: new data would be refused
    due = c.next_send_ns(now + MS)
    assert due is not None and due >= now + 2 * MS
    probe = _data(c.poll(due))
    assert [p.offset for p in probe] == [0] and c.stats["probes"] == 1
    assert c.cc.events == 0  # a window probe is not a congestion event
    assert _data(c.poll(due)) == []  # once per probe interval
    c.on_packet(Ack(s.local_id, c.local_id, probe[0].packet_number, (11,)), due + MS)
    assert [p.offset for p in _data(c.poll(due + MS))] == list(range(100, 200, 10))  # the floor moved


def test_acks_of_a_whole_batch_are_one_ack() -> None:
    c, s, now = _established(StreamConfig())
    for pn in range(8):
        s.on_packet(Data(c.local_id, s.local_id, 0, pn, pn * 10, b"y" * 10), now)
    acks = [p for p in (decode(d) for d in s.poll(now)) if isinstance(p, Ack)]
    assert len(acks) == 1 and acks[0].acked() == [(0, 7)]


def test_the_congestion_window_stops_at_its_ceiling() -> None:
    cc = Congestion(mss=1000, cwnd=10_000, min_cwnd=4000, burst=16, srtt_ns=MS, max_cwnd=12_000)
    for _ in range(10):
        cc.on_acked(1000, 1)
    assert cc.cwnd == 12_000 and cc.slow_start

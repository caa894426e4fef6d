"""The sender's rules for speed under loss: holes leave the window, lowest offset resent first, the
peer's window respected and probed, the congestion window's ceiling (decisions MARLIN-17, MARLIN-18)."""

from __future__ import annotations

from aeron_compat.marlin.congestion import Congestion
from aeron_compat.marlin.connection import Connection
from aeron_compat.marlin.limits import MS, StreamConfig
from aeron_compat.marlin.packets import Ack, Data, decode
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
    cfg = StreamConfig(max_payload=10, initial_cwnd_packets=4, pacing_burst_packets=64, reorder_threshold=1000)
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
    c.tx.mark_lost(2, now)  # declared in the order 20, 0
    c.tx.mark_lost(0, now)
    assert [p.offset for p in _data(c.poll(now))] == [0, 20]


def test_the_sender_stays_within_the_peers_window_and_probes_its_floor() -> None:
    # (the early resend of overtaken packets off: this is the probe for a floor nothing overtook)
    cfg = StreamConfig(max_payload=10, recv_window=100, pacing_burst_packets=64, reorder_threshold=1000)
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


def _sent_six(cfg: StreamConfig) -> tuple[Connection, Connection, int, int]:
    c, s, now = _established(cfg)
    sid = c.open_stream()
    c.send(sid, b"x" * 60)
    assert [p.offset for p in _data(c.poll(now))] == [0, 10, 20, 30, 40, 50]  # pns 0-5
    return c, s, now, sid


def test_a_packet_overtaken_by_three_has_its_data_resent_at_once_without_a_loss() -> None:
    c, s, now, _ = _sent_six(StreamConfig(max_payload=10, pacing_burst_packets=64))
    c.on_packet(Ack(s.local_id, c.local_id, 2, (2,)), now + MS)  # pns 1-2: pn 0 overtaken by two
    assert _data(c.poll(now + MS)) == [] and 0 in c.sent
    c.on_packet(Ack(s.local_id, c.local_id, 3, (3,)), now + 2 * MS)  # pns 1-3: overtaken by three
    resent = _data(c.poll(now + 2 * MS))
    assert [(p.offset, p.packet_number) for p in resent] == [(0, 6)]
    assert c.stats["lost"] == 0 and c.cc.events == 0 and c.stats["early_resent"] == 1
    assert 0 not in c.sent and 0 in c.overtaken and c.state_sizes()["overtaken"] == 1


def test_an_overtaken_packet_is_lost_by_the_50ms_rule_once_with_its_congestion_event() -> None:
    c, s, now, sid = _sent_six(StreamConfig(max_payload=10, pacing_burst_packets=64))
    c.on_packet(Ack(s.local_id, c.local_id, 5, (5,)), now + MS)  # pns 1-5
    assert [p.offset for p in _data(c.poll(now + MS))] == [0]  # pn 6
    c.send(sid, b"y" * 10)
    assert [p.packet_number for p in _data(c.poll(now + 60 * MS))] == [7]
    c.on_packet(Ack(s.local_id, c.local_id, 7, (7,)), now + 61 * MS)  # pns 1-7: pn 0 never
    assert c.stats["lost"] == 1 and c.cc.events == 1 and not c.overtaken
    assert c.lost == [] and _data(c.poll(now + 61 * MS)) == []  # its data went already: not again


def test_an_overtaken_packet_acked_late_was_only_reordered() -> None:
    c, s, now, sid = _sent_six(StreamConfig(max_payload=10, pacing_burst_packets=64))
    c.on_packet(Ack(s.local_id, c.local_id, 5, (5,)), now + MS)
    assert 0 in c.overtaken and len(_data(c.poll(now + MS))) == 1
    c.on_packet(Ack(s.local_id, c.local_id, 5, (6,)), now + 2 * MS)  # pn 0 arrived after all
    assert not c.overtaken
    c.send(sid, b"y" * 10)
    c.poll(now + 60 * MS)
    c.on_packet(Ack(s.local_id, c.local_id, 7, (8,)), now + 61 * MS)
    assert c.stats["lost"] == 0 and c.cc.events == 0


def test_the_last_ack_is_repeated_once_when_nothing_follows_it() -> None:
    cfg = StreamConfig()
    c, s, now = _established(cfg)
    for pn in range(2):
        s.on_packet(Data(c.local_id, s.local_id, 0, pn, pn * 10, b"y" * 10), now)
    first = [decode(d) for d in s.poll(now)]
    assert len(first) == 1 and isinstance(first[0], Ack)
    due = s.next_timer()
    assert due == now + cfg.ack_repeat_ns
    s.on_timer(due)
    again = [decode(d) for d in s.poll(due)]
    assert again == first  # a lost last ACK would otherwise stall the sender until its tail-loss timer
    after = s.next_timer()
    assert after is not None and after >= now + cfg.idle_timeout_ns  # once: no ACK chatter when idle


def test_a_repeated_ack_spares_the_sender_its_tail_loss_timer() -> None:
    net = SimNet()
    pair = Pair(net, StreamConfig(ack_every=1))
    net.run_until(pair.established)
    acks = 0

    def drop(data: bytes, src: object, dst: object) -> bool:
        nonlocal acks
        if isinstance(decode(data), Ack):
            acks += 1
            return acks == 1  # the only ACK of a one-packet flight
        return False

    net.drop = drop
    sid = pair.client.open_stream()
    pair.client.send(sid, b"z" * 100, fin=True)
    net.run_until(lambda: pair.client.all_sent())
    assert pair.client.stats["tlp"] == 0 and pair.client.stats["retransmitted"] == 0


def test_congestion_avoidance_adds_growth_packets_per_window_acked() -> None:
    cc = Congestion(mss=1000, cwnd=100_000, min_cwnd=4000, burst=16, srtt_ns=MS, growth=4)
    cc.ssthresh = cc.cwnd  # congestion avoidance
    for _ in range(100):  # one window's worth
        cc.on_acked(1000, 1)
    assert 103_500 <= cc.cwnd <= 104_000
    assert StreamConfig().avoidance_growth_packets == 4


def test_the_pacing_bucket_holds_two_timer_granularities_of_the_rate() -> None:
    cc = Congestion(mss=1000, cwnd=1_000_000, min_cwnd=4000, burst=16, srtt_ns=MS, granularity_ns=MS)
    cc.ssthresh = cc.cwnd  # avoidance: 1.25 cwnd per srtt = 1250 packets per ms
    while cc.may_send(0):
        cc.on_sent(1000)
    sent = 0
    while cc.may_send(MS) and sent < 5000:  # one timer granularity later
        cc.on_sent(1000)
        sent += 1
    assert 1200 <= sent <= 1300  # not capped at the 16-packet burst (16 packets per ms: ~20 MB/s)


def test_a_paced_sender_wakes_for_several_packets_not_each_one() -> None:
    cc = Congestion(mss=1000, cwnd=100_000, min_cwnd=4000, burst=16, srtt_ns=100 * MS)
    cc.ssthresh = cc.cwnd  # 1.25 packets per ms
    while cc.may_send(0):
        cc.on_sent(1000)
    one, eight = cc.next_send_ns(0, 1), cc.next_send_ns(0, 8)
    assert one < eight and eight > 6 * one
    assert cc.next_send_ns(0, 100) == cc.next_send_ns(0, 8)  # at most half the bucket (16 packets)


def test_the_window_stops_growing_while_the_round_trip_shows_a_standing_queue() -> None:
    cc = Congestion(mss=1000, cwnd=100_000, min_cwnd=4000, burst=16, srtt_ns=MS, max_queue_delay_ns=10 * MS)
    cc.on_rtt(MS)
    cc.on_acked(1000, 1)
    assert cc.cwnd == 101_000  # slow start: a packet per packet acked
    for _ in range(40):
        cc.on_rtt(30 * MS)  # 29 ms above the least round trip: the extra window sits in a queue
    assert cc.queueing
    cc.on_acked(1000, 1)
    assert cc.cwnd == 101_000
    for _ in range(40):
        cc.on_rtt(2 * MS)  # the queue drained
    cc.on_acked(1000, 1)
    assert cc.cwnd == 102_000 and StreamConfig().max_queue_delay_ns == 10 * MS

"""The simulator on its own, driven by FakeEngine: ordering, chunking, faults, replay, 0-RTT, credit."""

from __future__ import annotations

import itertools
import random

import pytest

from aqueduct.core.transport import (
    CloseConnection,
    ConnectionTerminated,
    GrantCredit,
    HandshakeCompleted,
    ResetStream,
    SendDatagram,
    SendStreamData,
    StopSending,
    StopSendingReceived,
    StreamDataReceived,
)
from aqueduct.testing import NetConfig, Simulation, SimulationError
from aqueduct.testing.fake import FakeEngine
from aqueduct.wire.channel_id import Side


def make(net: NetConfig | None = None, seed: int = 0, *, echo: bool = False) -> Simulation[FakeEngine]:
    return Simulation(FakeEngine(), FakeEngine(echo=echo), net, seed=seed)


def write_pattern(sim: Simulation[FakeEngine], streams: list[int], writes: int, seed: int) -> dict[int, bytes]:
    """Random writes on several client uni streams; returns what each stream carried."""
    rng = random.Random(seed)
    sent = {sid: b"" for sid in streams}
    for i in range(writes):
        sid = rng.choice(streams)
        data = bytes([i % 256]) * rng.randint(1, 40)
        sent[sid] += data
        sim.client.engine.out.append(SendStreamData(sid, data))
        if rng.random() < 0.3:
            sim.advance(rng.uniform(0, 0.01))
    for sid in streams:
        sim.client.engine.out.append(SendStreamData(sid, b"", end_stream=True))
    return sent


@pytest.mark.parametrize("seed", range(5))
def test_stream_bytes_arrive_in_order_with_fin_last(seed: int) -> None:
    sim = make(NetConfig(jitter=0.02), seed)
    streams = [2, 6, 10, 14]
    sent = write_pattern(sim, streams, 60, seed)
    sim.run_until_idle()
    server = sim.server.engine
    for sid in streams:
        assert server.stream_data(sid) == sent[sid]
        chunks = server.chunks(sid)
        assert [c.end_stream for c in chunks] == [False] * (len(chunks) - 1) + [True]
    assert not sim.misuse


def test_chunks_are_split_and_streams_interleave() -> None:
    sim = make(NetConfig(jitter=0.0), 3)
    sim.advance(1.0)
    sim.client.engine.out += [SendStreamData(2, bytes(500)), SendStreamData(6, bytes(500))]
    sim.run_until_idle()
    order = [e.stream_id for _, e in sim.server.engine.received if isinstance(e, StreamDataReceived)]
    assert len(sim.server.engine.chunks(2)) > 1 and len(sim.server.engine.chunks(6)) > 1
    switches = sum(a != b for a, b in itertools.pairwise(order))
    assert switches >= 2


def test_no_split_delivers_each_write_whole() -> None:
    sim = make(NetConfig(split_chunks=False, jitter=0.0), 1)
    sim.client.engine.out.append(SendStreamData(2, bytes(300), end_stream=True))
    sim.run_until_idle()
    assert [len(c.data) for c in sim.server.engine.chunks(2)] == [300]


def test_handshake_order_and_rtt() -> None:
    sim = make(NetConfig(one_way=0.01, jitter=0.0))
    sim.client.engine.out.append(SendStreamData(0, b"hello"))
    sim.run_until_idle()
    ((tc, hc_c),) = sim.client.engine.of_type(HandshakeCompleted)
    kinds = [type(e) for _, e in sim.server.engine.received]
    assert kinds[0] is HandshakeCompleted and StreamDataReceived in kinds
    assert tc == pytest.approx(0.02)
    assert sim.server.engine.received[0][0] == pytest.approx(0.03)
    assert sim.client.engine.rtts == [pytest.approx(0.02)] and sim.server.engine.rtts == [pytest.approx(0.02)]
    assert hc_c == HandshakeCompleted(early_data_accepted=False, session_resumed=False)


def test_accepted_0rtt_reaches_server_before_its_handshake() -> None:
    sim = make(NetConfig(zero_rtt=True, accept_0rtt=True, jitter=0.0))
    sim.client.engine.out += [SendStreamData(0, b"early"), SendDatagram(b"dgram")]
    sim.run_until_idle()
    kinds = [type(e).__name__ for _, e in sim.server.engine.received]
    assert kinds.index("StreamDataReceived") < kinds.index("HandshakeCompleted")
    assert sim.server.engine.datagrams() == [b"dgram"]
    assert sim.server.engine.of_type(HandshakeCompleted)[0][1] == HandshakeCompleted(True, True)


@pytest.mark.parametrize("seed", range(10))
def test_rejected_0rtt_stream_bytes_arrive_exactly_once_after_handshake(seed: int) -> None:
    sim = make(NetConfig(zero_rtt=True, accept_0rtt=False, jitter=0.005), seed)
    rng = random.Random(seed)
    sent = b""
    while sim.now < sim.client_handshake_at + 0.02:
        data = rng.randbytes(rng.randint(1, 30))
        sent += data
        sim.client.engine.out += [SendStreamData(0, data), SendDatagram(b"d")]
        sim.advance(0.003)
    sim.run_until_idle()
    server = sim.server.engine
    assert server.stream_data(0) == sent
    hs_time = server.of_type(HandshakeCompleted)[0][0]
    assert all(t >= hs_time for t, _ in server.of_type(StreamDataReceived))
    assert server.received[0][1] == HandshakeCompleted(early_data_accepted=False, session_resumed=True)
    # every datagram sent before the client's handshake is gone; the later ones arrive
    assert sim.stats["datagrams_0rtt_dropped"] > 0
    assert len(server.datagrams()) == sim.stats["datagrams_sent"] - sim.stats["datagrams_0rtt_dropped"]


def test_without_0rtt_early_datagrams_are_held_not_dropped() -> None:
    sim = make(NetConfig(zero_rtt=False))
    sim.client.engine.out.append(SendDatagram(b"x"))
    sim.run_until_idle()
    ((t, _),) = [(t, e) for t, e in sim.server.engine.received if type(e).__name__ == "DatagramReceived"]
    assert t >= sim.server_handshake_at


def test_server_data_never_reaches_client_before_its_handshake() -> None:
    sim = make(NetConfig(one_way=0.05))
    sim.server.engine.out.append(SendStreamData(3, b"too early"))
    sim.run_until_idle()
    kinds = [type(e) for _, e in sim.client.engine.received]
    assert kinds == [HandshakeCompleted, StreamDataReceived]


def test_datagram_fault_statistics_at_a_seed() -> None:
    net = NetConfig(datagram_loss=0.2, datagram_dup=0.1, datagram_reorder=0.3, jitter=0.0, reorder_delay=0.05)
    sim = make(net, 42)
    sim.advance(1.0)
    for i in range(2000):
        sim.client.engine.out.append(SendDatagram(i.to_bytes(2, "big")))
        sim.advance(0.001)
    sim.run_until_idle()
    got = [int.from_bytes(d, "big") for d in sim.server.engine.datagrams()]
    st = sim.stats
    assert st["datagrams_sent"] == 2000
    assert 300 < st["datagrams_dropped"] < 500
    assert 120 < st["datagrams_duplicated"] < 240
    assert len(got) == 2000 - st["datagrams_dropped"] + st["datagrams_duplicated"]
    assert len(set(got)) == 2000 - st["datagrams_dropped"]
    inversions = sum(a > b for a, b in itertools.pairwise(got))
    assert inversions > 100


def test_same_seed_replays_exactly_and_other_seeds_differ() -> None:
    def run(seed: int) -> list[tuple[float, str]]:
        net = NetConfig(datagram_loss=0.3, datagram_dup=0.2, datagram_reorder=0.5, jitter=0.03)
        sim = make(net, seed, echo=True)
        write_pattern(sim, [0, 4, 8], 40, 0)
        for i in range(50):
            sim.client.engine.out.append(SendDatagram(bytes([i])))
            sim.advance(0.002)
        sim.run_until_idle()
        return [(t, repr(e)) for t, e in sim.server.engine.received + sim.client.engine.received]

    assert run(5) == run(5)
    assert run(5) != run(6)


def test_echo_on_bidi_stream_round_trips() -> None:
    sim = make(echo=True)
    sim.client.engine.out.append(SendStreamData(0, b"ping", end_stream=True))
    sim.run_until_idle()
    assert sim.client.engine.stream_data(0) == b"ping"
    assert sim.client.engine.chunks(0)[-1].end_stream


@pytest.mark.parametrize("seed", range(20))
def test_reset_delivers_a_prefix_then_the_reset(seed: int) -> None:
    sim = make(NetConfig(reset_keep=0.3), seed)
    sim.client.engine.out += [SendStreamData(2, bytes(range(200))), ResetStream(2, 1)]
    sim.run_until_idle()
    server = sim.server.engine
    data = server.stream_data(2)
    assert bytes(range(200)).startswith(data)
    assert type(server.received[-1][1]).__name__ == "StreamReset"
    assert server.resets()[0].error_code == 1


def test_reset_prefix_varies_across_seeds() -> None:
    lengths = set()
    for seed in range(30):
        sim = make(NetConfig(reset_keep=0.2), seed)
        sim.client.engine.out += [SendStreamData(2, bytes(100)), ResetStream(2, 2)]
        sim.run_until_idle()
        lengths.add(len(sim.server.engine.stream_data(2)))
    assert 100 in lengths and len(lengths) > 3


def test_reset_after_everything_delivered_is_not_seen() -> None:
    sim = make()
    sim.client.engine.out.append(SendStreamData(2, b"x", end_stream=True))
    sim.run_until_idle()
    sim.client.engine.out.append(ResetStream(2, 1))
    sim.run_until_idle()
    assert not sim.server.engine.resets()


def test_stop_sending_reaches_the_peer() -> None:
    sim = make()
    sim.client.engine.out.append(SendStreamData(0, b"x"))
    sim.run_until_idle()
    sim.server.engine.out.append(StopSending(0, 1))
    sim.run_until_idle()
    assert [e for _, e in sim.client.engine.received if isinstance(e, StopSendingReceived)] == [
        StopSendingReceived(0, 1)
    ]
    # like aioquic, the client's stack reset its sending side with the same code; writing on it is misuse
    assert [(r.stream_id, r.error_code) for r in sim.server.engine.resets()] == [(0, 1)]
    sim.client.engine.out.append(SendStreamData(0, b"late"))
    sim.run_until_idle()
    assert sim.misuse == ["CLIENT: write on stream 0 after FIN or reset"]


def test_close_terminates_both_and_drops_traffic_in_flight() -> None:
    sim = make()
    sim.advance(1.0)
    sim.client.engine.out += [SendStreamData(2, b"lost"), CloseConnection(7, "bye")]
    sim.run_until_idle()
    assert sim.client.engine.received[-1][1] == ConnectionTerminated(7, "bye", by_peer=False)
    assert sim.server.engine.received[-1][1] == ConnectionTerminated(7, "bye", by_peer=True)
    assert not sim.server.engine.chunks(2)
    sim.server.engine.out.append(SendStreamData(3, b"after"))
    sim.server.engine.deadline = sim.now + 1
    sim.run_until_idle()
    assert not sim.client.engine.chunks(3) and not sim.server.engine.timers


def test_credit_window_holds_bytes_until_granted() -> None:
    sim = make(NetConfig(stream_window=100))
    sim.advance(1.0)
    sim.client.engine.out.append(SendStreamData(2, bytes(250), end_stream=True))
    sim.run_until_idle()
    assert len(sim.server.engine.stream_data(2)) == 100
    assert sim.held_bytes(Side.CLIENT, 2) == 150
    assert not any(c.end_stream for c in sim.server.engine.chunks(2))
    sim.server.engine.out.append(GrantCredit(2, 100))
    sim.run_until_idle()
    assert len(sim.server.engine.stream_data(2)) == 200 and sim.held_bytes(Side.CLIENT) == 50
    sim.server.engine.out.append(GrantCredit(2, 60))
    sim.run_until_idle()
    assert len(sim.server.engine.stream_data(2)) == 250
    assert sim.server.engine.chunks(2)[-1].end_stream


def test_without_flow_control_credit_is_ignored_but_checked() -> None:
    sim = make()
    sim.advance(1.0)
    sim.client.engine.out.append(SendStreamData(2, bytes(10)))
    sim.run_until_idle()
    sim.server.engine.out += [GrantCredit(2, 0), GrantCredit(2, 10), GrantCredit(2, 1)]
    sim.run_until_idle()
    assert sim.misuse == ["SERVER: GrantCredit of 0 on stream 2"]
    assert sim.overcredit == ["SERVER: GrantCredit total 11 on stream 2, only 10 bytes received"]


def test_hold_and_release_one_stream() -> None:
    sim = make()
    sim.advance(1.0)
    sim.hold_stream(Side.CLIENT, 2)
    sim.client.engine.out += [SendStreamData(2, b"held"), SendStreamData(6, b"free")]
    sim.run_until_idle()
    assert sim.server.engine.stream_data(6) == b"free" and not sim.server.engine.chunks(2)
    assert sim.undelivered_bytes(Side.CLIENT) == 4
    sim.release_stream(Side.CLIENT, 2)
    sim.run_until_idle()
    assert sim.server.engine.stream_data(2) == b"held"


def test_drop_and_delay_next_matching_datagram() -> None:
    sim = make(NetConfig(jitter=0.0))
    sim.advance(1.0)
    sim.drop_next_datagram(Side.CLIENT, lambda d: d == b"b")
    sim.delay_next_datagram(Side.CLIENT, 0.5, lambda d: d == b"c")
    sim.client.engine.out += [SendDatagram(b"a"), SendDatagram(b"b"), SendDatagram(b"c"), SendDatagram(b"b")]
    sim.run_until_idle()
    assert sim.server.engine.datagrams() == [b"a", b"b", b"c"]


def test_pause_freezes_delivery_but_not_timers() -> None:
    sim = make()
    sim.advance(1.0)
    sim.pause()
    sim.client.engine.out.append(SendDatagram(b"x"))
    sim.server.engine.deadline = sim.now + 0.5
    sim.advance(2.0)
    assert not sim.server.engine.datagrams() and sim.server.engine.timers == [pytest.approx(1.5)]
    assert sim.run_until_idle() == pytest.approx(3.0)
    sim.resume()
    sim.run_until_idle()
    assert sim.server.engine.datagrams() == [b"x"]


def test_timers_fire_at_deadlines_in_virtual_time() -> None:
    sim = make()
    sim.client.engine.deadline = 0.25
    sim.run_until_idle()
    assert sim.client.engine.timers == [0.25] and sim.now == 0.25


def test_timer_livelock_is_reported() -> None:
    class Stuck(FakeEngine):
        def handle_timer(self, now: float) -> None:
            self.timers.append(now)

    sim = Simulation(Stuck(), FakeEngine())
    sim.client.engine.deadline = 0.1
    with pytest.raises(SimulationError, match="livelock"):
        sim.run_until_idle()


def test_misuse_is_recorded() -> None:
    sim = make(NetConfig(max_datagram_size=10))
    sim.client.engine.out += [
        SendStreamData(3, b"x"),  # a server uni stream
        SendStreamData(1, b"x"),  # a server bidi stream the server never opened
        SendStreamData(2, b"x", end_stream=True),
        SendStreamData(2, b"y"),
        SendDatagram(bytes(11)),
    ]
    sim.run_until_idle()
    assert len(sim.misuse) == 4


def test_app_events_are_logged_with_times() -> None:
    from aqueduct.core.app import MessageAvailable

    sim = make()
    sim.advance(0.5)
    sim.server.engine.app.append(MessageAvailable(3))
    sim.pump()
    assert sim.server.log == [(0.5, MessageAvailable(3))]
    assert sim.server.take_events() == [MessageAvailable(3)] and sim.server.take_events() == []


def test_late_fault_holds_datagrams_and_streams_past_deadlines() -> None:
    sim = make(NetConfig(late=0.5, late_delay=3.0, jitter=0.0), 11)
    sim.advance(1.0)
    for i in range(40):
        sim.client.engine.out += [SendDatagram(bytes([i])), SendStreamData(2, bytes([i]))]
    sim.run_until_idle()
    times = [t - 1.0 for t, e in sim.server.engine.received if type(e).__name__ == "DatagramReceived"]
    assert min(times) == pytest.approx(0.02) and max(times) > 1.5
    assert sim.server.engine.stream_data(2) == bytes(range(40))  # a late write delays the stream, never reorders it
    assert sim.stats["late"] > 20


def test_stream_limit_blocks_new_streams_until_old_ones_close() -> None:
    sim = make(NetConfig(max_streams=2, jitter=0.0))
    sim.advance(1.0)
    sim.client.engine.out += [SendStreamData(sid, b"x") for sid in (2, 6, 10)]
    sim.run_until_idle()
    assert [bool(sim.server.engine.chunks(sid)) for sid in (2, 6, 10)] == [True, True, False]
    sim.client.engine.out.append(SendStreamData(2, b"", end_stream=True))  # uni stream 2 closes
    sim.run_until_idle()
    assert sim.server.engine.stream_data(10) == b"x"


def test_bidi_stream_closes_only_when_both_directions_end() -> None:
    sim = make(NetConfig(max_streams=1, jitter=0.0))
    sim.advance(1.0)
    sim.client.engine.out += [SendStreamData(0, b"a", end_stream=True), SendStreamData(4, b"b")]
    sim.run_until_idle()
    assert not sim.server.engine.chunks(4)
    sim.server.engine.out.append(ResetStream(0, 2))  # the server's direction of stream 0 ends too
    sim.run_until_idle()
    assert sim.server.engine.stream_data(4) == b"b"

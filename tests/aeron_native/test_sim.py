"""Sans-I/O Aeron publisher and receiver over a simulated lossy, reordering network."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from aeron_compat.client.codes import Action
from aeron_compat.native.codec import decode_datagram, encode_frame
from aeron_compat.native.frames import ErrorFrame, Flags, FrameType, Heartbeat, Nak, Setup, StatusMessage
from aeron_compat.native.image import Header, ImageConfig
from aeron_compat.native.publisher import OfferCode, Publisher
from aeron_compat.native.publisher_config import DestinationMode, PublisherConfig
from aeron_compat.native.receiver import Receiver, ReceiverConfig
from aeron_native.simnet import PUB, SUB, SUB2, Collector, SimNet, message

SESSION, STREAM = 1234, 10


def make_pub(net: SimNet, dests: tuple[tuple[str, int], ...] = (SUB,), initial_term_id: int = 7,
             term_length: int = 64 * 1024, **kw: Any) -> Publisher:
    cfg = PublisherConfig(session_id=SESSION, stream_id=STREAM, initial_term_id=initial_term_id,
                          term_length=term_length, **kw)
    pub = Publisher(cfg, net.now)
    for d in dests:
        pub.add_destination(d, manual=True)
    net.publisher = pub
    return pub


def make_rec(net: SimNet, addr: tuple[str, int] = SUB, **kw: Any) -> Receiver:
    image = ImageConfig(receiver_id=addr[1], **kw)
    rec = Receiver(ReceiverConfig(stream_id=STREAM, image=image), net.now)
    net.receivers[addr] = rec
    return rec


def connect(net: SimNet, pub: Publisher) -> None:
    net.run_until(lambda: pub.is_connected(net.now))


def stream(net: SimNet, pub: Publisher, msgs: list[bytes], recs: dict[Receiver, Collector],
           max_ticks: int = 20_000) -> None:
    """Offer `msgs` as fast as flow control allows while the receivers poll, until all arrive everywhere."""
    sent = 0

    def step() -> bool:
        nonlocal sent
        while sent < len(msgs):
            result = pub.offer(msgs[sent], net.now)
            if result == OfferCode.ADMIN_ACTION:
                continue
            if result < 0:
                break
            sent += 1
        for rec, coll in recs.items():
            rec.poll(coll, 50, net.now)
        net.flush()
        return sent == len(msgs) and all(len(c.messages) == len(msgs) for c in recs.values())

    net.run_until(step, max_ticks)


def test_setup_handshake_connects_and_messages_arrive_in_order() -> None:
    net = SimNet()
    pub = make_pub(net)
    rec = make_rec(net)
    assert pub.offer(b"early", net.now) == OfferCode.NOT_CONNECTED
    connect(net, pub)
    assert [type(f) for f in decode_datagram(net.sent[0][0])] == [Setup]
    assert len(rec.available) == 1 and rec.available[0].session_id == SESSION
    msgs = [message(i, 32) for i in range(500)]
    coll = Collector()
    stream(net, pub, msgs, {rec: coll})
    assert coll.messages == msgs
    assert pub.position == 500 * 64  # 32-byte header + 32-byte payload, aligned


def test_fragmentation_sets_begin_and_end_flags_and_reassembles() -> None:
    net = SimNet()
    pub = make_pub(net, mtu=1408)
    rec = make_rec(net)
    connect(net, pub)
    max_payload = 1408 - 32
    msgs = [message(1, max_payload), message(2, max_payload + 1), message(3, 3 * max_payload), message(4, 0)]
    coll = Collector()
    stream(net, pub, msgs, {rec: coll})
    assert coll.messages == msgs
    assert coll.fragments == [
        (Flags.UNFRAGMENTED, max_payload),
        (Flags.BEGIN, max_payload), (Flags.END, 1),
        (Flags.BEGIN, max_payload), (0, max_payload), (Flags.END, max_payload),
        (Flags.UNFRAGMENTED, 0),
    ]
    assert all(len(d) <= 1408 for d, _, _ in net.sent)


def test_term_rotation_pads_and_wraps_term_ids() -> None:
    net = SimNet()
    pub = make_pub(net, initial_term_id=2**31 - 2)
    rec = make_rec(net)
    connect(net, pub)
    msgs = [message(i, 1000) for i in range(300)]  # ~5 terms of 64 KiB
    coll = Collector()
    stream(net, pub, msgs, {rec: coll})
    assert coll.messages == msgs
    assert pub.log.term_id(pub.position) < 0  # wrapped past int32 max
    pads = [f for d, _, _ in net.sent for f in decode_datagram(d) if type(f).__name__ == "PadFrame"]
    assert pads and all(f.term_offset + f.length == 64 * 1024 for f in pads)  # type: ignore[union-attr]


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([0.05, 0.2]))
def test_loss_and_reordering_are_repaired_by_naks(seed: int, loss: float) -> None:
    net = SimNet(seed=seed, loss=loss, jitter_ns=400_000)
    pub = make_pub(net)
    rec = make_rec(net)
    connect(net, pub)
    msgs = [message(i, 100 + (i * 37) % 1500) for i in range(400)]
    coll = Collector()
    stream(net, pub, msgs, {rec: coll})
    assert coll.messages == msgs
    assert pub.naks_received > 0 and pub.retransmits_sent > 0


def test_tail_loss_is_found_through_heartbeats() -> None:
    net = SimNet()
    pub = make_pub(net)
    rec = make_rec(net)
    connect(net, pub)
    dropped: list[bytes] = []

    def drop_last_once(data: bytes, src: tuple[str, int], dst: tuple[str, int]) -> bool:
        if dst == SUB and not dropped and b"LAST" in data:
            dropped.append(data)
            return True
        return False

    net.drop = drop_last_once
    assert pub.offer(b"LAST", net.now) > 0
    coll = Collector()
    net.run_until(lambda: rec.poll(coll, 10, net.now) > 0 or bool(coll.messages))
    assert dropped and coll.messages == [b"LAST"]
    assert any(isinstance(f, Heartbeat) for d, _, dst in net.sent if dst == SUB for f in decode_datagram(d))
    assert any(isinstance(f, Nak) for d, _, dst in net.sent if dst == PUB for f in decode_datagram(d))


def test_heartbeats_are_zero_length_data_at_the_sender_position() -> None:
    net = SimNet()
    pub = make_pub(net)
    make_rec(net)
    connect(net, pub)
    start = len(net.sent)
    for _ in range(350):
        net.tick()
    beats = [f for d, _, dst in net.sent[start:] if dst == SUB for f in decode_datagram(d)]
    assert 3 <= len(beats) <= 4 and all(isinstance(f, Heartbeat) and f.term_id == 7 for f in beats)
    assert encode_frame(beats[0])[:4] == b"\0\0\0\0"


def test_nak_resend_damping_ignores_repeats_within_linger() -> None:
    net = SimNet()
    pub = make_pub(net)
    make_rec(net)
    connect(net, pub)
    pub.offer(b"x" * 100, net.now)
    net.tick()
    before = pub.retransmits_sent
    nak = encode_frame(Nak(SESSION, STREAM, 7, 0, 128))
    pub.on_datagram(nak, SUB, net.now)
    pub.on_datagram(nak, SUB, net.now + 1_000_000)
    assert pub.retransmits_sent == before + 1
    pub.on_timer(net.now + 20_000_000)
    pub.on_datagram(nak, SUB, net.now + 20_000_000)
    assert pub.retransmits_sent == before + 2


def test_back_pressure_when_the_subscriber_stops_polling_and_no_data_is_lost() -> None:
    net = SimNet()
    pub = make_pub(net)
    rec = make_rec(net)
    connect(net, pub)
    accepted = 0
    result = 0
    for _ in range(200):
        while (result := pub.offer(message(accepted, 32), net.now)) > 0 or result == OfferCode.ADMIN_ACTION:
            accepted += result > 0
        net.tick()
    assert result == OfferCode.BACK_PRESSURED
    # bounded by receiver window (half a term) plus the publisher's term window (half a term)
    assert accepted * 64 <= 64 * 1024 + 1408
    coll = Collector()
    net.run_until(lambda: rec.poll(coll, 100, net.now) == 0 and len(coll.messages) == accepted)
    assert coll.messages == [message(i, 32) for i in range(accepted)]
    assert pub.offer(b"more", net.now) > 0


def test_end_of_stream_makes_the_image_unavailable_and_the_publisher_finish() -> None:
    net = SimNet()
    pub = make_pub(net, linger_ns=5_000_000_000)
    rec = make_rec(net)
    connect(net, pub)
    coll = Collector()
    stream(net, pub, [b"a", b"b"], {rec: coll})
    pub.close(net.now)
    assert pub.offer(b"c", net.now) == OfferCode.CLOSED
    net.run_until(lambda: rec.poll(coll, 10, net.now) >= 0 and bool(rec.unavailable))
    assert rec.unavailable[0].end_of_stream and not rec.images
    net.run_until(lambda: pub.is_finished(net.now), max_ticks=200)
    eos_sms = [f for d, _, dst in net.sent if dst == PUB for f in decode_datagram(d)
               if isinstance(f, StatusMessage) and f.flags & Flags.SM_EOS]
    assert eos_sms


def test_image_liveness_timeout_without_packets() -> None:
    net = SimNet(tick_ns=10_000_000)
    pub = make_pub(net)
    rec = make_rec(net, liveness_timeout_ns=1_000_000_000)
    connect(net, pub)
    net.publisher = None  # the publisher vanishes
    net.run_until(lambda: bool(rec.unavailable), max_ticks=150)
    assert not rec.unavailable[0].end_of_stream and rec.unavailable[0].closed


def test_late_receiver_elicits_setup_and_joins_mid_stream() -> None:
    net = SimNet()
    pub = make_pub(net)
    rec = make_rec(net)
    connect(net, pub)
    stream(net, pub, [message(i, 200) for i in range(50)], {rec: Collector()})
    late = Receiver(ReceiverConfig(stream_id=STREAM), net.now)  # a restarted subscriber, same endpoint
    net.receivers[SUB] = late
    assert pub.offer(b"trigger", net.now) > 0  # data for an unknown session makes the receiver ask for SETUP
    net.run_until(lambda: bool(late.images))
    assert late.available[0].join_position > 0
    coll = Collector()
    stream(net, pub, [message(i, 200) for i in range(50, 60)], {late: coll})
    sms = [f for d, _, dst in net.sent if dst == PUB for f in decode_datagram(d) if isinstance(f, StatusMessage)]
    assert any(f.flags & Flags.SM_SETUP for f in sms)


def test_rtt_measured_in_both_directions() -> None:
    net = SimNet(delay_ns=300_000, tick_ns=100_000)
    pub = make_pub(net)
    rec = make_rec(net)
    connect(net, pub)
    pub.probe_rtt(net.now)
    rec.probe_rtt(net.now)
    net.flush()
    net.run_until(lambda: pub.last_rtt_ns is not None and rec.images[SESSION].last_rtt_ns is not None)
    assert 600_000 <= (pub.last_rtt_ns or 0) <= 800_000
    assert 600_000 <= (rec.images[SESSION].last_rtt_ns or 0) <= 800_000


def test_manual_mdc_sends_to_every_destination_and_removal_works_mid_stream() -> None:
    net = SimNet(seed=3, loss=0.05)
    pub = make_pub(net, dests=(SUB, SUB2), mode=DestinationMode.MANUAL)
    a, b = make_rec(net, SUB), make_rec(net, SUB2)
    net.run_until(lambda: len(pub.receivers) == 2)
    ca, cb = Collector(), Collector()
    msgs = [message(i, 300) for i in range(200)]
    stream(net, pub, msgs, {a: ca, b: cb})
    assert ca.messages == msgs and cb.messages == msgs
    pub.remove_destination(SUB2)
    more = [message(i, 300) for i in range(200, 260)]
    ca2, cb2 = Collector(), Collector()
    stream(net, pub, more, {a: ca2})
    b.poll(cb2, 100, net.now)
    assert ca2.messages == more and not cb2.messages and SUB2 not in pub.destinations


def test_dynamic_mdc_receivers_announce_themselves_and_expire() -> None:
    net = SimNet(tick_ns=2_000_000)
    pub = make_pub(net, dests=(), mode=DestinationMode.DYNAMIC, receiver_timeout_ns=500_000_000)
    recs = {}
    for addr in (SUB, SUB2):
        rec = Receiver(ReceiverConfig(stream_id=STREAM, control=PUB, image=ImageConfig(receiver_id=addr[1])), 0)
        net.receivers[addr] = rec
        recs[rec] = Collector()
    net.run_until(lambda: len(pub.receivers) == 2)
    assert set(pub.destinations) == {SUB, SUB2}
    msgs = [message(i, 500) for i in range(100)]
    stream(net, pub, msgs, recs)
    assert all(c.messages == msgs for c in recs.values())
    del net.receivers[SUB2]
    net.run_until(lambda: SUB2 not in pub.destinations, max_ticks=1000)
    assert set(pub.destinations) == {SUB}


def test_flow_control_follows_the_slowest_mdc_receiver() -> None:
    net = SimNet()
    pub = make_pub(net, dests=(SUB, SUB2), mode=DestinationMode.MANUAL)
    fast, slow = make_rec(net, SUB), make_rec(net, SUB2)
    net.run_until(lambda: len(pub.receivers) == 2)
    cf = Collector()
    sent = 0
    for _ in range(300):
        while pub.offer(message(sent, 100), net.now) > 0:
            sent += 1
        fast.poll(cf, 100, net.now)
        net.tick()
    window = slow.images[SESSION].window
    assert pub.sender_position <= window + 160
    assert len(cf.messages) < sent


def test_garbage_and_foreign_frames_are_counted_not_fatal() -> None:
    net = SimNet()
    pub = make_pub(net)
    rec = make_rec(net)
    pub.on_datagram(b"\xff" * 7, SUB, 0)
    rec.on_datagram(b"\x00\x00\x00\x80garbage", PUB, 0)
    rec.on_datagram(encode_frame(Setup(0, 1, 99, 0, 0, 64 * 1024, 1408)), PUB, 0)  # other stream
    rec.on_datagram(encode_frame(Setup(0, 1, STREAM, 0, 0, 1000, 1408)), PUB, 0)  # bad term length
    unknown = (40).to_bytes(4, "little") + bytes([0, 0, FrameType.ATS_SM, 0]) + bytes(32)
    rec.on_datagram(unknown, PUB, 0)
    pub.on_datagram(unknown, SUB, 0)
    assert pub.invalid_datagrams == 1 and rec.invalid_datagrams == 2 and not rec.images


def test_controlled_poll_abort_redelivers_and_break_stops() -> None:
    net = SimNet()
    pub = make_pub(net)
    rec = make_rec(net)
    connect(net, pub)
    for i in range(5):
        assert pub.offer(message(i, 8), net.now) > 0
    image = rec.images[SESSION]
    net.run_until(lambda: image.rebuild_position == pub.position)
    seen: list[bytes] = []

    def handler(actions: list[Action]) -> Callable[[memoryview, Header], Action]:
        def on_fragment(buf: memoryview, header: Header) -> Action:
            seen.append(bytes(buf))
            return actions.pop(0)
        return on_fragment

    assert rec.poll(handler([Action.CONTINUE, Action.ABORT]), 10, net.now, controlled=True) == 1
    assert rec.poll(handler([Action.COMMIT, Action.BREAK]), 10, net.now, controlled=True) == 2
    assert rec.poll(handler([Action.CONTINUE, Action.CONTINUE]), 10, net.now, controlled=True) == 2
    assert seen == [message(i, 8) for i in (0, 1, 1, 2, 3, 4)]
    assert image.subscriber_position == pub.position


def test_error_frames_for_the_publication_are_kept() -> None:
    net = SimNet()
    pub = make_pub(net)
    pub.on_datagram(encode_frame(ErrorFrame(SESSION + 1, STREAM, 9, 0, 3, b"not mine")), SUB, 0)
    assert pub.last_error is None
    err = ErrorFrame(SESSION, STREAM, 9, 0, 3, b"rejected")
    pub.on_datagram(encode_frame(err), SUB, 0)
    assert pub.last_error == err


def test_claims_hold_the_sender_until_committed_and_aborts_become_padding() -> None:
    net = SimNet()
    pub = make_pub(net)
    rec = make_rec(net)
    connect(net, pub)
    first = pub.claim(5, net.now)
    second = pub.claim(3, net.now)
    assert pub.offer(b"after", net.now) > 0
    for _ in range(5):
        net.tick()
    assert pub.sender_position == first  # nothing passes an open claim
    pub.abort_claim(second, 3)
    pub.commit_claim(first, b"hello", reserved_value=42)
    got: list[tuple[bytes, int]] = []
    net.run_until(lambda: rec.poll(lambda b, h: got.append((bytes(b), h.reserved_value)), 10, net.now) >= 0
                  and len(got) == 2)
    assert got == [(b"hello", 42), (b"after", 0)]
    assert rec.images[SESSION].subscriber_position == pub.position

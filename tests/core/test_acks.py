"""SentUnreliable, AckReliable and AckNackUnreliable timing; nacked messages are never delivered."""

from __future__ import annotations

import pytest
from core_helpers import client_ready, feed, of, server_ready, written

from aqueduct.core.app import Delivery, MessagesAcked, MessagesNacked
from aqueduct.core.transport import DatagramReceived
from aqueduct.wire.frames import (
    AckNackUnreliable,
    AckReliable,
    ChannelControl,
    CloseReceiver,
    Message,
    SentUnreliable,
    encode_frames,
)


def _attached_client(rtt: float):  # type: ignore[no-untyped-def]
    c = client_ready()
    c.update_rtt(rtt)
    feed(c, 1, [ChannelControl(0)])
    c.commands()
    return c


@pytest.mark.spec("send.sent-unreliable")
def test_sent_unreliable_goes_out_within_half_an_rtt() -> None:
    c = _attached_client(0.05)
    c.send(1, b"u", delivery=Delivery.UNRELIABLE, now=0.0)
    c.send(1, b"u", delivery=Delivery.UNRELIABLE, now=0.01)
    assert c.next_deadline() == 0.025
    c.handle_timer(0.025)
    assert written(c.commands(), 1) == [SentUnreliable(2)]  # batched
    assert c.next_deadline() is None


@pytest.mark.spec("send.sent-unreliable")
def test_sent_unreliable_goes_out_within_the_configured_delay_on_slow_paths() -> None:
    c = _attached_client(2.0)
    c.send(1, b"u", delivery=Delivery.UNRELIABLE, now=1.0)
    assert c.next_deadline() == 1.1


@pytest.mark.spec("send.sent-unreliable")
def test_sent_unreliable_waits_for_the_control_stream() -> None:
    c = client_ready()
    c.send(1, b"u", delivery=Delivery.UNRELIABLE)
    c.commands()
    assert c.next_deadline() is None
    feed(c, 1, [ChannelControl(0)])
    assert written(c.commands(), 1) == [SentUnreliable(1)]


@pytest.mark.spec("acks.reliable")
def test_acks_are_batched_within_ack_delay() -> None:
    s = server_ready()
    feed(s, 2, [Message(0, 0), Message(0, 1)], now=0.0)
    feed(s, 2, [Message(0, 2)], now=0.01)
    assert written(s.commands(), 1) == []
    assert s.next_deadline() == 0.05
    s.handle_timer(0.05)
    assert written(s.commands(), 1) == [AckReliable((3,))]


@pytest.mark.spec("acks.reliable")
def test_ack_reliable_counts_from_the_acked_prefix_and_acks_only_new_numbers() -> None:
    s = server_ready()
    feed(s, 2, [Message(0, 0)], now=0.0)
    feed(s, 6, [Message(0, 2)], now=0.0)
    s.handle_timer(1.0)
    assert written(s.commands(), 1) == [AckReliable((1, 1, 1))]
    feed(s, 10, [Message(0, 1)], now=1.0)
    s.handle_timer(2.0)
    assert written(s.commands(), 1) == [AckReliable((1,))]  # start 1: only #1 is new, #2 is not re-acked


def _unreliable(n: int) -> DatagramReceived:
    return DatagramReceived(encode_frames([Message(0, n, (), b"u%d" % n)]))


@pytest.mark.spec("acks.unreliable")
def test_missing_unreliable_is_nacked_after_the_timeout_not_before() -> None:
    s = server_ready()
    feed(s, 1, [SentUnreliable(2)], now=0.0)
    s.handle_event(_unreliable(1), 0.0)
    s.handle_timer(0.5)
    assert written(s.commands(), 1) == []  # #1 cannot be acked before #0 is decided
    assert s.next_deadline() == 1.0
    s.handle_timer(1.0)
    assert written(s.commands(), 1) == [AckNackUnreliable((0, 1, 1))]


@pytest.mark.spec("acks.unreliable")
def test_nack_timeout_stretches_to_two_rtts() -> None:
    s = server_ready()
    s.update_rtt(0.8)
    feed(s, 1, [SentUnreliable(1)], now=0.0)
    assert s.next_deadline() == 1.6


@pytest.mark.spec("receive.nacked")
def test_a_nacked_message_is_never_delivered_even_if_it_arrives_later() -> None:
    s = server_ready()
    rx = s.entrypoint or 0
    feed(s, 1, [SentUnreliable(2)], now=0.0)
    s.handle_event(_unreliable(1), 0.0)
    s.handle_timer(1.0)
    s.handle_event(_unreliable(0), 1.5)
    taken = []
    while (m := s.take_message(rx)) is not None:
        taken.append(m.number)
    assert taken == [1]


@pytest.mark.spec("acks.unreliable")
def test_unreliable_received_before_its_declaration_is_acked() -> None:
    s = server_ready()
    s.handle_event(_unreliable(0), 0.0)
    s.handle_timer(0.05)
    assert written(s.commands(), 1) == [AckNackUnreliable((1,))]


@pytest.mark.spec("acks.sender")
def test_sender_reports_every_number_once() -> None:
    c = _attached_client(0.1)
    for _ in range(3):
        c.send(1, b"r")
    for _ in range(3):
        c.send(1, b"u", delivery=Delivery.UNRELIABLE)
    c.events()
    # CloseReceiver re-states #1 as acked: ignored, not a double ack
    feed(c, 1, [AckReliable((0, 1, 1)), AckNackUnreliable((1, 1)), CloseReceiver((0, 1, 2))])
    evs = c.events()
    seen: list[tuple[bool, int]] = []
    for e in of(evs, MessagesAcked) + of(evs, MessagesNacked):
        seen += [(e.reliable, n) for n in range(e.first, e.stop)]
    assert sorted(seen) == sorted([(True, n) for n in range(3)] + [(False, n) for n in range(3)])
    nacked = {(e.reliable, n) for e in of(evs, MessagesNacked) for n in range(e.first, e.stop)}
    assert nacked == {(True, 0), (False, 1), (False, 2)}


@pytest.mark.spec("send.sent-unreliable")
def test_sent_unreliable_bookkeeping_stays_bounded_and_never_nacks_early() -> None:
    s = server_ready()
    for i in range(10_000):
        feed(s, 1, [SentUnreliable(1)], now=i * 0.00001)  # 10,000 declarations within 0.1 s
    r = s._receivers[s.entrypoint or 0]
    assert r.acks is not None and len(r.acks.declarations or ()) <= 3
    s.handle_timer(0.999)
    assert written(s.commands(), 1) == []  # the first declaration's full second has not passed

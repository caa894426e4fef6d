"""The channel-tree traffic is checked by the one ledger: each rule's violation is caught (no network here)."""

from __future__ import annotations

from harness.traffic import ChannelRecord, TrafficLog

from aqueduct.core.app import Delivery
from aqueduct.errors import EndReason

ORD, UNO, UNR = Delivery.ORDERED, Delivery.UNORDERED, Delivery.UNRELIABLE
CONN = 1234


def channel(log: TrafficLog, sent: list[Delivery], received: list[tuple[int, Delivery, int]],
            receiver_end: EndReason = EndReason.FINISHED) -> ChannelRecord:
    """A channel whose producer sent `sent` (numbered per reliability) and whose drain got `received`."""
    rec = log.new_channel()
    rec.sender_key = (CONN, rec.cid)  # one sender handle per channel
    counts = {True: 0, False: 0}
    for seq, delivery in enumerate(sent):
        reliable = delivery is not UNR
        rec.sent[seq] = (delivery, counts[reliable])
        counts[reliable] += 1
    rec.received = received
    rec.sender_end, rec.receiver_end = EndReason.FINISHED, receiver_end
    return rec


def acked(log: TrafficLog, rec: ChannelRecord, reliable: bool, *numbers: int, nack: bool = False) -> None:
    table = log.nacks if nack else log.acks
    assert rec.sender_key is not None
    table.setdefault(rec.sender_key, {True: set(), False: set()})[reliable].update(numbers)


def test_a_clean_channel_and_its_acks_pass() -> None:
    log = TrafficLog()
    rec = channel(log, [ORD, UNO, UNR, UNR], [(0, ORD, 0), (1, UNO, 1), (3, UNR, 1)])
    acked(log, rec, True, 0, 1)
    acked(log, rec, False, 1)
    acked(log, rec, False, 0, nack=True)
    log.check(rec)
    assert log.wants_acks(rec) and log.acks_settled(rec)
    log.check_acks(rec)
    assert log.violations == [] and log.acks_checked == 1
    log.forget(rec)
    assert log.ledger.messages == {} and log.ledger.channels == {}


def test_deliveries_break_the_rules() -> None:
    log = TrafficLog()
    log.check(channel(log, [ORD, ORD, UNR], [(1, ORD, 1), (0, ORD, 0), (0, ORD, 0), (2, UNR, 7), (9, ORD, 9)]))
    text = "\n".join(log.violations)
    assert "ordered delivery after #1" in text  # out of send order
    assert "delivered 2x" in text  # twice
    assert "delivered as unreliable n=7" in text  # another number than it was sent with
    assert "delivered 1#9, never sent" in text


def test_a_finished_receiver_missing_a_reliable_message() -> None:
    log = TrafficLog()
    log.check(channel(log, [ORD, UNO, UNR], [(0, ORD, 0)]))
    assert log.violations == ["channel 1: finished but reliable [1] missing"]
    log.violations.clear()
    log.check(channel(log, [ORD, UNO], [(0, ORD, 0)], receiver_end=EndReason.CLOSED))  # closed early: no promise
    assert log.violations == []


def test_nacked_yet_delivered_either_way() -> None:
    log = TrafficLog()
    rec = channel(log, [UNR, UNR], [(0, UNR, 0)])
    acked(log, rec, False, 0, nack=True)
    log.check(rec)
    assert any("delivered after being nacked" in v for v in log.violations)
    log.violations.clear()
    rec = channel(log, [UNR, UNR], [(0, UNR, 0), (1, UNR, 1)])
    log.check(rec)
    acked(log, rec, False, 1, nack=True)
    acked(log, rec, False, 0)
    log.check_acks(rec)
    assert any("nacked after being delivered" in v for v in log.violations)


def test_acks_that_do_not_agree_with_deliveries() -> None:
    log = TrafficLog()
    rec = channel(log, [ORD, UNR, UNR], [(0, ORD, 0), (1, UNR, 0)])
    log.check(rec)
    assert not log.acks_settled(rec)
    acked(log, rec, False, 1)  # acked, never delivered
    acked(log, rec, True, 3)  # never sent
    log.check_acks(rec)
    text = "\n".join(log.violations)
    assert "1#0(ordered n=0): reliable, finished, not acked" in text
    assert "1#1(unreliable n=0): never acked nor nacked" in text
    assert "1#2(unreliable n=1): acked 1x but delivered 0x" in text
    assert "acked 3 (reliable=True) never sent" in text

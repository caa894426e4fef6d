"""ConnectionTap: API-layer calls and engine events become the documented rows."""

from __future__ import annotations

from pathlib import Path

from aqueduct.core.app import (
    ConnectionClosed,
    Delivery,
    MessageAvailable,
    MessagesAcked,
    MessagesNacked,
    ReceiverEnded,
    SenderEnded,
)
from aqueduct.errors import EndReason
from aqueduct.recording import Recorder, read_events

HANDLES = {10: 4, 11: 8, 12: 12}


def test_messages_outcomes_and_ends(tmp_path: Path) -> None:
    with Recorder(tmp_path, payloads=True) as rec:
        tap = rec.connection("client", "127.0.0.1:4433", connection_id="conn-1")
        tap.created(8, outgoing=True, parent=4)
        tap.sent(4, 0, Delivery.ORDERED, b"hello", (8,))
        tap.sent(4, 1, Delivery.UNORDERED, b"hi")
        tap.sent(4, 0, Delivery.UNRELIABLE, b"dgram")
        tap.received(12, 0, Delivery.ORDERED, b"back")
        tap.app_event(MessagesAcked(10, True, 0, 2), HANDLES.get)
        tap.app_event(MessagesNacked(10, False, 0, 1), HANDLES.get)
        tap.app_event(MessageAvailable(12), HANDLES.get)  # not recorded
        tap.app_event(SenderEnded(11, EndReason.RECEIVER_DROPPED), HANDLES.get)
        tap.app_event(ReceiverEnded(12, EndReason.CANCELLED), HANDLES.get)
        tap.app_event(SenderEnded(99, EndReason.LOST), HANDLES.get)  # unknown handle: ignored
        tap.stats(0.0012, 14720, 1200, 3)
        tap.app_event(ConnectionClosed(0, "bye", by_peer=True), HANDLES.get)
    events = read_events(tmp_path)
    kinds = [e["kind"] for e in events]
    assert kinds == [
        "connection_opened", "channel_created", "message_sent", "message_sent", "message_sent",
        "message_received", "acked", "acked", "nacked", "receiver_dropped", "channel_cancelled",
        "connection_stats", "connection_closed",
    ]  # fmt: skip
    assert {e["connection"] for e in events} == {"conn-1"}
    assert events[0]["detail"] == "client 127.0.0.1:4433"
    assert events[1]["channel"] == 8 and events[1]["parent"] == 4 and events[1]["direction"] == "out"
    first = events[2]
    assert (first["channel"], first["number"], first["delivery"], first["length"]) == (4, 0, "ordered", 5)
    assert first["attachments"] == [8] and first["payload"] == b"hello" and first["direction"] == "out"
    assert events[5]["direction"] == "in" and events[5]["payload"] == b"back"
    acks = events[6:8]
    assert [(a["number"], a["delivery"]) for a in acks] == [(0, "ordered"), (1, "unordered")]
    assert all(a["latency_ns"] >= 0 for a in acks)
    nack = events[8]
    assert (nack["number"], nack["delivery"]) == (0, "unreliable") and nack["latency_ns"] >= 0
    assert events[9]["direction"] == "out" and events[9]["detail"] == "receiver dropped"
    assert events[10]["direction"] == "in" and events[10]["channel"] == 12
    assert events[11]["rtt_us"] == 1200.0 and events[11]["cwnd"] == 14720 and events[11]["packets_lost"] == 3
    assert events[12]["detail"] == "peer: bye"


def test_payloads_are_off_by_default(tmp_path: Path) -> None:
    with Recorder(tmp_path) as rec:
        rec.connection("server").sent(1, 0, Delivery.ORDERED, b"secret")
    sent = read_events(tmp_path)[1]
    assert sent["payload"] is None and sent["length"] == 6


def test_outcome_without_a_known_send_has_no_latency(tmp_path: Path) -> None:
    with Recorder(tmp_path) as rec:
        rec.connection("client").acked(4, True, 5, 6)
    ack = read_events(tmp_path)[1]
    assert ack["latency_ns"] is None and ack["number"] == 5


def test_pending_send_times_are_bounded_and_cleared(tmp_path: Path) -> None:
    with Recorder(tmp_path) as rec:
        tap = rec.connection("client")
        tap.max_pending = 3
        for n in range(5):
            tap.sent(4, n, Delivery.ORDERED, b"")
        assert len(tap._pending) == 3
        tap.ended(4, True, EndReason.CANCELLED)
        assert not tap._pending
        tap.sent(8, 0, Delivery.ORDERED, b"")
        tap.closed(0)
        assert not tap._pending

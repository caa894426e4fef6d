"""The driver's ledger flags each rule's violation (so a green property run means something)."""

from __future__ import annotations

from aqueduct.core.app import Delivered, Delivery
from aqueduct.testing.ledger import Ledger, decode_payload, encode_payload
from aqueduct.wire.channel_id import Side

C, S = Side.CLIENT, Side.SERVER


def ledger_with(*deliveries: Delivery) -> Ledger:
    led = Ledger()
    led.new_channel("E", C, False)
    led.bind_sender(C, 1, "E")
    led.bind_receiver(S, 7, "E")
    for k, mode in enumerate(deliveries):
        led.on_send(C, 1, "E", k, mode, k)
    return led


def deliver(led: Ledger, k: int, mode: Delivery = Delivery.ORDERED, number: int | None = None) -> None:
    payload = encode_payload("E", k, [], 3)
    led.on_deliver(S, 7, Delivered(payload, (), 0, k if number is None else number, mode))


def test_payload_round_trip() -> None:
    assert decode_payload(encode_payload("c3", 5, ["c4", "c5"], 10)) == ("c3", 5, ["c4", "c5"])
    assert decode_payload(encode_payload("E", 0, [], 0)) == ("E", 0, [])


def test_clean_run_has_no_violation() -> None:
    led = ledger_with(Delivery.ORDERED, Delivery.ORDERED)
    deliver(led, 0)
    deliver(led, 1)
    led.on_acknack(C, 1, True, 0, 2, ack=True)
    led.final_check(connection_lost=False)
    assert led.violations == []


def test_double_delivery() -> None:
    led = ledger_with(Delivery.UNRELIABLE)
    deliver(led, 0, Delivery.UNRELIABLE)
    deliver(led, 0, Delivery.UNRELIABLE)
    assert any("delivered 2x" in v for v in led.violations)


def test_double_ack_and_ack_plus_nack() -> None:
    led = ledger_with(Delivery.ORDERED, Delivery.ORDERED)
    led.on_acknack(C, 1, True, 0, 1, ack=True)
    led.on_acknack(C, 1, True, 0, 2, ack=True)
    led.on_acknack(C, 1, True, 1, 2, ack=False)
    assert sum("acked 2x" in v for v in led.violations) == 1
    assert any("acked 1x and nacked 1x" in v for v in led.violations)


def test_delivered_and_nacked_either_order() -> None:
    led = ledger_with(Delivery.UNRELIABLE, Delivery.UNRELIABLE)
    deliver(led, 0, Delivery.UNRELIABLE)
    led.on_acknack(C, 1, False, 0, 1, ack=False)
    led.on_acknack(C, 1, False, 1, 2, ack=False)
    deliver(led, 1, Delivery.UNRELIABLE)
    assert any("nacked after being delivered" in v for v in led.violations)
    assert any("delivered after being nacked" in v for v in led.violations)


def test_out_of_order_on_ordered_channel() -> None:
    led = ledger_with(Delivery.ORDERED, Delivery.ORDERED)
    deliver(led, 1)
    deliver(led, 0)
    assert any("ordered delivery after" in v for v in led.violations)


def test_wrong_number_wrong_receiver_and_unknown_ack() -> None:
    led = ledger_with(Delivery.ORDERED)
    deliver(led, 0, number=5)
    led.new_channel("c1", C, False)
    led.bind_receiver(S, 8, "c1")
    led.on_deliver(S, 8, Delivered(encode_payload("E", 0, [], 0), (), 0, 0, Delivery.ORDERED))
    led.on_acknack(C, 1, True, 3, 4, ack=True)
    text = "\n".join(led.violations)
    assert "delivered as ordered n=5" in text and "(channel c1) delivered E#0" in text and "never sent" in text


def test_final_check_unresolved_unacked_delivery_and_lost_ack() -> None:
    led = ledger_with(Delivery.ORDERED, Delivery.ORDERED, Delivery.ORDERED)
    deliver(led, 0)  # delivered, never acked
    led.on_acknack(C, 1, True, 1, 2, ack=True)  # acked, never delivered to a held receiver
    led.final_check(connection_lost=False)
    text = "\n".join(led.violations)
    assert "E#0(ordered n=0): delivered but not acked" in text
    assert "E#1(ordered n=1): acked but never delivered" in text
    assert "E#2(ordered n=2): never acked nor nacked" in text


def test_app_actions_excuse_undelivered_messages() -> None:
    led = ledger_with(Delivery.ORDERED, Delivery.ORDERED)
    led.on_acknack(C, 1, True, 0, 1, ack=True)
    led.channels["E"].receiver_discarded = True
    led.channels["E"].sender_abandoned = True
    led.final_check(connection_lost=False)
    assert led.violations == []


def test_handles_bound_to_the_wrong_side_or_twice() -> None:
    led = Ledger()
    led.new_channel("c1", C, False)
    led.bind_sender(S, 3, "c1")
    led.bind_receiver(C, 4, "c1")
    led.bind_receiver(S, 5, "c1")
    assert len(led.violations) == 3


def test_end_reasons_need_a_cause() -> None:
    from aqueduct.errors import EndReason

    led = ledger_with(Delivery.ORDERED)
    deliver(led, 0)
    led.on_acknack(C, 1, True, 0, 1, ack=True)
    child = led.new_channel("c1", S, False, created_by=("E", 0))
    led.bind_sender(S, 9, "c1")
    led.bind_receiver(C, 10, "c1")
    child.sender_end = EndReason.RECEIVER_DROPPED
    child.receiver_end = EndReason.LOST
    led.final_check(connection_lost=True)
    text = "\n".join(led.violations)
    assert "c1: ended lost though its creating message was delivered" in text
    assert "c1: sender ended receiver-dropped, the receiving app kept it" in text
    child.receiver_end = EndReason.CANCELLED
    led.violations.clear()
    led.final_check(connection_lost=True)
    assert any("receiver ended cancelled, the sending app never cancelled" in v for v in led.violations)
    assert led.channels["c1"].depth == 1


def test_one_ledger() -> None:
    # the simulator's driver and the real-connection traffic (tests/harness/traffic.py) check with this class;
    # no other class of the library or the harnesses is called Ledger
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found = [
        str(path.relative_to(root))
        for folder in ("aqueduct", "aeron_compat", "tests/harness")
        for path in sorted((root / folder).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and node.name == "Ledger"
    ]
    assert found == ["aqueduct/testing/ledger.py"]

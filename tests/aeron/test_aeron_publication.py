"""offer / try_claim / back pressure / positions, modelled on Aeron's publication system tests."""

from __future__ import annotations

import asyncio

import pytest

from aeron_compat import (
    ADMIN_ACTION,
    BACK_PRESSURED,
    CLOSED,
    MAX_POSITION_EXCEEDED,
    NOT_CONNECTED,
    Aeron,
    MessageTooLongError,
    PublicationClosedError,
    PublicationResult,
)
from aeron_compat.client.codes import HDR_TYPE_PAD

IPC = "aeron:ipc?term-length=64k"


def collect(sub, limit: int = 10_000) -> list[bytes]:  # type: ignore[no-untyped-def]
    out: list[bytes] = []
    sub.poll(lambda buf, hdr: out.append(bytes(buf)), limit)
    return out


def test_no_subscriber_gives_not_connected_then_positions_increase(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 1)
    assert pub.offer(b"a") == NOT_CONNECTED and not pub.is_connected
    sub = aeron.add_subscription(IPC, 1)
    assert pub.is_connected
    positions = [pub.offer(bytes(n)) for n in (0, 1, 32, 33, 100)]
    assert positions == [32, 96, 160, 256, 416]
    assert all(p % 32 == 0 for p in positions)
    assert collect(sub) == [bytes(n) for n in (0, 1, 32, 33, 100)]
    assert isinstance(NOT_CONNECTED, PublicationResult) and int(NOT_CONNECTED) == -1


def test_filling_the_window_back_pressures_and_the_subscriber_gets_exactly_the_accepted(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 2)
    sub = aeron.add_subscription(IPC, 2)
    accepted = []
    refused = 0
    for i in range(2000):
        msg = i.to_bytes(4, "little") * 8
        result = pub.offer(msg)
        if result > 0:
            accepted.append(msg)
        else:
            assert result == BACK_PRESSURED
            refused += 1
    assert refused and pub.position >= pub.position_limit - 64
    assert pub.position_limit == 65536 // 2
    assert collect(sub) == accepted
    assert aeron.counters["back_pressure_events"] == refused
    assert pub.offer(b"after") > 0


def test_late_subscriber_joins_at_the_tail(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 3)
    first = aeron.add_subscription(IPC, 3)
    pub.offer(b"early")
    late = aeron.add_subscription(IPC, 3)
    (image,) = late.images
    assert image.join_position == pub.position == 64
    pub.offer(b"later")
    assert collect(late) == [b"later"]
    assert collect(first) == [b"early", b"later"]


def test_over_long_messages_are_rejected(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 4)
    aeron.add_subscription(IPC, 4)
    assert pub.max_message_length == 8192
    with pytest.raises(MessageTooLongError):
        pub.offer(bytes(8193))
    assert pub.offer(bytes(8192)) > 0
    with pytest.raises(MessageTooLongError):
        pub.try_claim(pub.max_payload_length + 1)


def test_term_rotation_returns_admin_action_and_pads(aeron: Aeron) -> None:
    pub = aeron.add_publication("aeron:ipc?term-length=64k|init-term-id=10|term-id=10|term-offset=65472", 5)
    sub = aeron.add_subscription(IPC, 5)
    assert pub.position == 65472
    assert pub.offer(bytes(100)) == ADMIN_ACTION
    assert pub.position == 65536
    assert pub.offer(bytes(100)) == 65536 + 160
    seen = []
    sub.poll(lambda buf, hdr: seen.append((hdr.term_id, hdr.term_offset)), 10)
    assert seen == [(11, 0)]


def test_max_position_exceeded_at_the_last_term(aeron: Aeron) -> None:
    last = 2**31 - 1
    pub = aeron.add_publication(f"aeron:ipc?term-length=64k|init-term-id=0|term-id={last}|term-offset=65440", 6)
    aeron.add_subscription(IPC, 6)
    assert pub.position == pub.max_possible_position - 96
    assert pub.offer(bytes(10)) > 0
    assert pub.offer(bytes(40)) == MAX_POSITION_EXCEEDED


def test_try_claim_commit_abort_and_reserved_value(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 7)
    sub = aeron.add_subscription(IPC, 7)
    with pub.try_claim(5) as claim:
        assert claim and claim.result == 64
        claim.put_bytes(b"hello")
        claim.reserved_value = 0x1234_5678_9ABC
    with pytest.raises(RuntimeError), pub.try_claim(3) as claim2:
        claim2.buffer[:3] = b"bad"
        raise RuntimeError("abandon")
    with pub.try_claim(2) as claim3:
        claim3.buffer[:] = b"ok"
    seen = []
    sub.poll(lambda buf, hdr: seen.append((bytes(buf), hdr.reserved_value)), 10)
    assert seen == [(b"hello", 0x1234_5678_9ABC), (b"ok", 0)]
    assert sub.images[0].position == pub.position == 192


def test_pending_claim_holds_back_later_offers(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 8)
    sub = aeron.add_subscription(IPC, 8)
    claim = pub.try_claim(4)
    assert pub.offer(b"second") > 0
    assert collect(sub) == []
    claim.put_bytes(b"1st!")
    claim.commit()
    assert collect(sub) == [b"1st!", b"second"]


def test_failed_claim_is_falsy_with_the_code(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 9)
    with pub.try_claim(8) as claim:
        assert not claim and claim.result == NOT_CONNECTED


def test_aborted_claim_becomes_padding(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 10)
    sub = aeron.add_subscription(IPC, 10)
    pub.try_claim(10).abort()
    image = sub.images[0]
    assert image._frames[0].frame_type == HDR_TYPE_PAD
    assert collect(sub) == [] and image.position == 64


def test_closed_publication_returns_closed(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 11)
    aeron.add_subscription(IPC, 11)
    pub.close()
    assert pub.offer(b"x") == CLOSED and pub.is_closed


def test_concurrent_publications_share_a_session_exclusive_ones_do_not(aeron: Aeron) -> None:
    a = aeron.add_publication(IPC, 12)
    b = aeron.add_publication(IPC, 12)
    x = aeron.add_exclusive_publication(IPC, 12)
    y = aeron.add_exclusive_publication(IPC, 12)
    assert a.session_id == b.session_id
    assert len({a.session_id, x.session_id, y.session_id}) == 3
    sub = aeron.add_subscription(IPC, 12)
    assert sub.image_count == 3
    a.close()
    assert b.offer(b"still open") > 0


def test_reserved_session_ids_are_never_picked(aeron: Aeron) -> None:
    ids = {aeron.add_exclusive_publication(IPC, 13).session_id for _ in range(200)}
    assert not any(-1 <= s <= 1000 for s in ids)


async def test_send_retries_back_pressure_and_raises_on_closed(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 14)
    sub = aeron.add_subscription(IPC, 14)
    received: list[bytes] = []

    async def consume() -> None:
        while len(received) < 3000:
            if not sub.poll(lambda buf, hdr: received.append(bytes(buf)), 100):
                await asyncio.sleep(0)

    consumer = asyncio.create_task(consume())
    for i in range(3000):
        await pub.send(i.to_bytes(4, "little") * 8)
    await consumer
    assert received == [i.to_bytes(4, "little") * 8 for i in range(3000)]
    assert aeron.counters["back_pressure_events"] > 0
    pub.close()
    with pytest.raises(PublicationClosedError):
        await pub.send(b"x")


async def test_send_times_out_when_never_connected(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 15)
    with pytest.raises(TimeoutError):
        await pub.send(b"x", timeout=0.01)


def test_explicit_session_ids_clash_with_exclusive_publications(aeron: Aeron) -> None:
    from aeron_compat import RegistrationError

    aeron.add_exclusive_publication("aeron:ipc?session-id=77", 16)
    with pytest.raises(RegistrationError, match="session-id"):
        aeron.add_exclusive_publication("aeron:ipc?session-id=77", 16)
    with pytest.raises(RegistrationError, match="session-id"):
        aeron.add_publication("aeron:ipc?session-id=77", 16)
    shared = aeron.add_publication("aeron:ipc?session-id=78", 16)
    assert aeron.add_publication("aeron:ipc?session-id=78", 16).session_id == shared.session_id == 78
    assert aeron.add_exclusive_publication("aeron:ipc?session-id=77", 17).session_id == 77


def test_image_joining_during_a_pending_claim_starts_after_it(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 18)
    first = aeron.add_subscription(IPC, 18)
    claim = pub.try_claim(3)
    late = aeron.add_subscription(IPC, 18)
    pub.offer(b"next")
    claim.put_bytes(b"old")
    claim.commit()
    assert collect(first) == [b"old", b"next"]
    assert collect(late) == [b"next"]

"""Polling, fragments, assembly, controlled poll, images and their lifecycle."""

from __future__ import annotations

import pytest

from aeron_compat import Action, Aeron, ControlledFragmentAssembler, FragmentAssembler, Header, Image
from aeron_compat.client.codes import BEGIN_FLAG, END_FLAG, UNFRAGMENTED

IPC = "aeron:ipc?term-length=64k|mtu=1408"
MAX_PAYLOAD = 1408 - 32


def raw(sub, limit: int = 1000) -> list[tuple[int, int, int]]:  # type: ignore[no-untyped-def]
    out: list[tuple[int, int, int]] = []
    sub.poll(lambda buf, hdr: out.append((len(buf), hdr.flags, hdr.frame_length)), limit)
    return out


@pytest.mark.parametrize(
    ("length", "fragments"),
    [(0, 1), (1, 1), (MAX_PAYLOAD - 1, 1), (MAX_PAYLOAD, 1), (MAX_PAYLOAD + 1, 2), (2 * MAX_PAYLOAD, 2),
     (2 * MAX_PAYLOAD + 1, 3), (8192, 6)],
)
def test_fragments_raw_and_assembled(aeron: Aeron, length: int, fragments: int) -> None:
    pub = aeron.add_publication(IPC, 1)
    sub = aeron.add_subscription(IPC, 1)
    data = bytes(i % 253 for i in range(length))
    assert pub.offer(data) > 0
    frames = raw(sub)
    assert len(frames) == fragments
    if fragments == 1:
        assert frames[0][1] == UNFRAGMENTED
    else:
        assert frames[0][1] == BEGIN_FLAG and frames[-1][1] == END_FLAG
        assert all(f[1] == 0 for f in frames[1:-1])
        assert all(f[0] == MAX_PAYLOAD for f in frames[:-1])
    assert sum(f[0] for f in frames) == length
    assert all(f[2] == f[0] + 32 for f in frames)
    pub.offer(data)
    whole: list[bytes] = []
    assert sub.poll(FragmentAssembler(lambda buf, hdr: whole.append(bytes(buf))), 1000) == fragments
    assert whole == [data]


def test_assembler_keeps_sessions_apart(aeron: Aeron) -> None:
    a = aeron.add_exclusive_publication(IPC, 2)
    b = aeron.add_exclusive_publication(IPC, 2)
    sub = aeron.add_subscription(IPC, 2)
    msg_a, msg_b = b"A" * 3000, b"B" * 2000
    a.offer(msg_a)
    b.offer(msg_b)
    got: dict[int, bytes] = {}
    assembler = FragmentAssembler(lambda buf, hdr: got.__setitem__(hdr.session_id, bytes(buf)))
    while sub.poll(assembler, 1):
        pass
    assert got == {a.session_id: msg_a, b.session_id: msg_b}


def test_header_fields(aeron: Aeron) -> None:
    pub = aeron.add_publication("aeron:ipc?term-length=64k|init-term-id=100|term-id=101|term-offset=64", 3)
    sub = aeron.add_subscription(IPC, 3)
    pub.offer(b"abc")
    seen: list[tuple[int, ...]] = []

    def handler(buf: memoryview, hdr: Header) -> None:
        seen.append((hdr.position, hdr.session_id, hdr.stream_id, hdr.term_id, hdr.term_offset, hdr.frame_length,
                     hdr.flags, hdr.reserved_value, hdr.initial_term_id))

    sub.poll(handler, 1)
    assert seen == [(65536 + 64 + 64, pub.session_id, 3, 101, 64, 35, UNFRAGMENTED, 0, 100)]


def test_controlled_poll_abort_redelivers_and_break_stops(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 4)
    sub = aeron.add_subscription(IPC, 4)
    for m in (b"1", b"2", b"3", b"4"):
        pub.offer(m)
    seen: list[bytes] = []
    actions = iter([Action.CONTINUE, Action.ABORT])

    def handler(buf: memoryview, hdr: Header) -> Action:
        action = next(actions)
        seen.append(bytes(buf))
        return action

    assert sub.controlled_poll(handler, 10) == 1
    assert seen == [b"1", b"2"]
    image = sub.images[0]
    assert image.position == 64
    actions = iter([Action.COMMIT, Action.BREAK])
    assert sub.controlled_poll(handler, 10) == 2
    assert seen == [b"1", b"2", b"2", b"3"]
    assert image.position == 192
    actions = iter([Action.CONTINUE])
    assert sub.controlled_poll(handler, 10) == 1
    assert seen[-1] == b"4"


def test_controlled_assembler_abort_redelivers_whole_message(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 5)
    sub = aeron.add_subscription(IPC, 5)
    data = bytes(range(256)) * 10
    pub.offer(data)
    calls: list[bytes] = []

    def handler(buf: memoryview, hdr: Header) -> Action:
        calls.append(bytes(buf))
        return Action.ABORT if len(calls) == 1 else Action.CONTINUE

    assembler = ControlledFragmentAssembler(handler)
    sub.controlled_poll(assembler, 100)
    sub.controlled_poll(assembler, 100)
    assert calls == [data, data]
    assert sub.images[0].position == pub.position


def test_fragment_limit_is_honoured_and_images_take_turns(aeron: Aeron) -> None:
    a = aeron.add_exclusive_publication(IPC, 6)
    b = aeron.add_exclusive_publication(IPC, 6)
    sub = aeron.add_subscription(IPC, 6)
    for _ in range(10):
        a.offer(b"a")
        b.offer(b"b")
    first: list[bytes] = []
    second: list[bytes] = []
    assert sub.poll(lambda buf, hdr: first.append(bytes(buf)), 3) == 3
    assert sub.poll(lambda buf, hdr: second.append(bytes(buf)), 3) == 3
    assert len(set(first)) == 1 and len(set(second)) == 1 and first[0] != second[0]


def test_closing_the_publication_gives_end_of_stream_then_unavailable(aeron: Aeron) -> None:
    events: list[tuple[str, int]] = []
    sub = aeron.add_subscription(IPC, 7, on_available_image=lambda i: events.append(("up", i.session_id)),
                                 on_unavailable_image=lambda i: events.append(("down", i.session_id)))
    pub = aeron.add_publication(IPC, 7)
    session = pub.session_id
    pub.offer(b"last words")
    image = sub.images[0]
    assert events == [("up", session)]
    pub.close()
    assert not image.is_end_of_stream
    got: list[bytes] = []
    sub.poll(lambda buf, hdr: got.append(bytes(buf)), 10)
    assert got == [b"last words"]
    assert image.is_end_of_stream and image.is_closed
    assert events == [("up", session), ("down", session)]
    assert sub.images == [] and not sub.is_connected
    assert aeron.counters["unavailable_images"] == 1


def test_image_handlers_run_on_the_polling_thread_only(aeron: Aeron) -> None:
    events: list[Image] = []
    sub = aeron.add_subscription(IPC, 8, on_available_image=events.append)
    aeron.add_publication(IPC, 8)
    assert events == []
    sub.poll(lambda buf, hdr: None, 1)
    assert len(events) == 1 and events[0].source_identity == "aeron:ipc"


def test_session_specific_subscription_sees_only_its_session(aeron: Aeron) -> None:
    mine = aeron.add_exclusive_publication("aeron:ipc?term-length=64k|session-id=4242", 9)
    other = aeron.add_exclusive_publication(IPC, 9)
    sub = aeron.add_subscription("aeron:ipc?session-id=4242", 9)
    everyone = aeron.add_subscription(IPC, 9)
    mine.offer(b"mine")
    other.offer(b"other")
    got: list[tuple[int, bytes]] = []
    sub.poll(lambda buf, hdr: got.append((hdr.session_id, bytes(buf))), 10)
    assert got == [(4242, b"mine")]
    assert sub.image_by_session_id(4242) is not None and sub.image_by_session_id(other.session_id) is None
    assert everyone.image_count == 2


def test_image_poll_directly(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 10)
    sub = aeron.add_subscription(IPC, 10)
    pub.offer(b"x")
    image = sub.image_by_session_id(pub.session_id)
    assert image is not None
    got: list[bytes] = []
    assert image.poll(lambda buf, hdr: got.append(bytes(buf)), 5) == 1 and got == [b"x"]


def test_closing_the_subscription_releases_the_publisher(aeron: Aeron) -> None:
    pub = aeron.add_publication(IPC, 11)
    sub = aeron.add_subscription(IPC, 11)
    while pub.offer(bytes(100)) > 0:
        pass
    sub.close()
    assert not pub.is_connected
    assert pub.offer(b"x") < 0
    again = aeron.add_subscription(IPC, 11)
    assert pub.offer(b"x") > 0
    assert again.images[0].join_position == pub.position - 64

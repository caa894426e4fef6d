"""The incremental FrameReader: any chunking gives the frames whole decoding
gives; a cut-off stream or one without frames fails at finish(); a hostile
declared length is refused at once, before any of its bytes are held."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wire_strategies import frame_lists, split

from aqueduct.wire import (
    CloseCode,
    ConnectionControl,
    Frame,
    FrameReader,
    Message,
    ProtocolError,
    SentUnreliable,
    Version,
    decode_frames,
    encode_frame,
    encode_frames,
    encode_varint,
)
from aqueduct.wire.reader import read_plain_message, read_plain_run, read_plain_whole


def feed_in_chunks(data: bytes, cuts: list[int], reader: FrameReader | None = None) -> list[Frame]:
    reader = reader or FrameReader()
    out: list[Frame] = []
    for chunk in split(data, cuts):
        out += reader.feed(chunk)
    reader.finish()
    return out


@pytest.mark.spec("frames.sequence")
@given(frame_lists, st.lists(st.integers(0, 10_000), max_size=20))
def test_any_chunking_equals_whole_decoding(fs: list[Frame], cuts: list[int]) -> None:
    data = encode_frames(fs)
    assert feed_in_chunks(data, cuts) == decode_frames(data) == fs


@pytest.mark.spec("frames.sequence")
@given(frame_lists)
def test_byte_by_byte_equals_whole_decoding(fs: list[Frame]) -> None:
    data = encode_frames(fs)
    assert feed_in_chunks(data, list(range(len(data)))) == fs


@pytest.mark.spec("frames.sequence")
def test_frames_come_out_as_soon_as_complete_and_rest_is_kept() -> None:
    a, b = encode_frame(SentUnreliable(5)), encode_frame(Message(8, 1, (), b"hello"))
    reader = FrameReader()
    assert reader.feed(a + b[:3]) == [SentUnreliable(5)]
    assert reader.buffered == 3
    assert reader.feed(b[3:]) == [Message(8, 1, (), b"hello")]
    assert reader.buffered == 0
    reader.finish()


@pytest.mark.spec("encoding.byte-arrays")
def test_large_message_in_small_chunks() -> None:
    msg = Message(3, 7, (5,), bytes(range(256)) * 300)
    data = encode_frame(msg)
    reader = FrameReader()
    out: list[Frame] = []
    for i in range(0, len(data), 1000):
        out += reader.feed(data[i : i + 1000])
    assert out == [msg]
    reader.finish()


@pytest.mark.spec("frames.decoding")
def test_finish_inside_a_frame_is_a_protocol_error() -> None:
    reader = FrameReader()
    assert reader.feed(encode_frame(Version())[:10]) == []
    with pytest.raises(ProtocolError, match="Version frame"):
        reader.finish()


def test_finish_without_any_frame_is_a_protocol_error() -> None:
    reader = FrameReader()
    assert reader.feed(b"") == []
    with pytest.raises(ProtocolError):
        reader.finish()


@pytest.mark.parametrize(
    "prefix",
    [
        b"\x03\x00\x00\x00",  # Message payload length
        b"\x03\x00\x00",  # Message attachments length
        b"\x01",  # ConnectionControl header data length
        b"\x05",  # AckReliable range data length
    ],
    ids=["payload", "attachments", "headers", "ranges"],
)
@pytest.mark.spec("encoding.byte-arrays")
@pytest.mark.parametrize("length", [1 << 60, (1 << 64) - 1, 16 * 1024 * 1024 + 1])
def test_hostile_declared_length_is_refused_before_buffering(prefix: bytes, length: int) -> None:
    head = prefix + encode_varint(length)
    reader = FrameReader()
    with pytest.raises(ProtocolError) as err:
        reader.feed(head + b"x" * 10)
    assert err.value.code is CloseCode.LIMIT_EXCEEDED
    with pytest.raises(ProtocolError) as err:
        decode_frames(head)
    assert err.value.code is CloseCode.LIMIT_EXCEEDED


def test_configured_max_frame_size_is_enforced_exactly() -> None:
    ok = encode_frame(Message(0, 0, (), b"x" * 100))
    assert FrameReader(max_frame_size=100).feed(ok) == [Message(0, 0, (), b"x" * 100)]
    reader = FrameReader(max_frame_size=99)
    with pytest.raises(ProtocolError, match="limit of 99"):
        reader.feed(ok[:6])
    with pytest.raises(ProtocolError):
        decode_frames(encode_frame(ConnectionControl((("k", b"v" * 200),))), max_frame_size=100)


def test_version_string_is_capped_at_255_bytes() -> None:
    assert decode_frames(encode_frame(Version("v" * 255))) == [Version("v" * 255)]
    with pytest.raises(ProtocolError):
        decode_frames(encode_frame(Version("v" * 256)))


def test_waiting_for_a_declared_length_holds_only_what_arrived() -> None:
    reader = FrameReader()
    head = b"\x03\x00\x00\x00" + encode_varint(10 * 1024 * 1024)
    assert reader.feed(head) == []
    assert reader.buffered == len(head)
    for _ in range(10):
        assert reader.feed(b"\x00" * 100) == []
    assert reader.buffered == len(head) + 1000


@given(frame_lists, st.lists(st.integers(0, 10_000), max_size=20))
def test_feed_sized_sizes_are_each_frames_encoded_length(fs: list[Frame], cuts: list[int]) -> None:
    reader = FrameReader()
    got: list[tuple[Frame, int]] = []
    for chunk in split(encode_frames(fs), cuts):
        if reader.absorb(chunk):
            continue
        frames, sizes = reader.feed_sized(chunk)
        got += zip(frames, sizes, strict=True)
    reader.finish()
    assert got == [(f, len(encode_frame(f))) for f in fs]


def test_absorb_keeps_only_pieces_that_cannot_complete_the_frame() -> None:
    data = encode_frame(Message(8, 1, (), bytes(1000)))
    reader = FrameReader()
    assert not reader.absorb(data[:10])  # nothing awaited yet: feed it
    assert reader.feed(data[:10]) == [] and reader.buffered == 10
    assert reader.absorb(data[10:500]) and reader.buffered == 500
    assert not reader.absorb(data[500:])  # completes the frame: feed it
    assert reader.feed(data[500:]) == [Message(8, 1, (), bytes(1000))] and reader.buffered == 0


@given(frame_lists)
def test_read_plain_message_agrees_with_the_general_reader(fs: list[Frame]) -> None:
    data = encode_frames(fs)
    pos = 0
    for f in fs:
        end = pos + len(encode_frame(f))
        if isinstance(f, Message):  # (callers only ask at a Message type byte)
            plain = read_plain_message(data, pos, 1 << 20)
            assert plain == (None if f.attachments else (f, end))
            for cut in (end - 1, pos + 3):
                short = read_plain_message(data[:cut], pos, 1 << 20)
                assert short is None or short == (None, end)  # an incomplete payload says where it ends
        pos = end


_run_messages = st.lists(
    st.builds(
        Message,
        st.sampled_from([0, 2, 6, 130, 20_000]),
        st.integers(0, 40_000) | st.sampled_from([2**21 - 1, 2**21, 2**28 - 1, 2**28]),
        st.sampled_from([(), (), (), (3,)]),
        st.binary(max_size=300) | st.sampled_from([bytes(200), bytes(20_000)]),
    ),
    min_size=1,
    max_size=12,
)


@given(_run_messages, st.integers(0, 30) | st.sampled_from([2**21 - 4, 2**28 - 4]), st.booleans(), st.integers(0, 300))
def test_read_plain_run_reads_the_leading_run_the_general_reader_reads(
    ms: list[Message], start: int, consecutive: bool, cut: int
) -> None:
    """The run is the longest prefix of plain complete Messages with the first's channel and numbers counting up."""
    if consecutive:  # (mostly one channel counting up, as an ordered stream carries)
        ms = [Message(ms[0].channel, start + i, m.attachments, m.payload) for i, m in enumerate(ms)]
    data = encode_frames(ms)
    data = data[: max(1, len(data) - cut)]
    payloads: list[bytes] = []
    sizes: list[int] = []
    channel, first, stop = read_plain_run(data, 0, 1 << 20, payloads, sizes)
    expect: list[Message] = []
    pos = 0
    for m in ms if ms[0].channel < 16384 else ():  # (longer channel ints are left to the general reader)
        end = pos + len(encode_frame(m))
        if m.attachments or end > len(data) or m.channel != ms[0].channel or m.number != ms[0].number + len(expect):
            break
        if m.number >= 1 << 28:  # (longer numbers too)
            break
        expect.append(m)
        pos = end
    assert payloads == [m.payload for m in expect]
    assert sizes == [len(encode_frame(m)) for m in expect]
    assert stop == pos and (channel, first) == ((ms[0].channel, ms[0].number) if expect else (0, 0))


@given(frame_lists, st.integers(0, 3))
def test_read_plain_whole_agrees_with_the_general_reader(fs: list[Frame], cut: int) -> None:
    for f in fs:
        data = encode_frame(f)
        whole = isinstance(f, Message) and not f.attachments and f.channel < 16384 and f.number < 1 << 28
        expect = (f.channel, f.number, f.payload) if whole and len(f.payload) < 1 << 14 else None
        assert read_plain_whole(data, 1 << 21) == expect
        if cut:
            assert read_plain_whole(data[:-cut], 1 << 21) is None
            assert read_plain_whole(data + bytes(cut), 1 << 21) is None
    assert read_plain_whole(encode_frame(Message(2, 0, (), bytes(50))), 49) is None


def test_read_plain_run_leaves_other_frames_and_oversized_payloads_to_the_general_reader() -> None:
    data = encode_frames([Message(2, 0, (), b"ab"), Message(2, 1, (), bytes(50))])
    assert read_plain_run(data, 0, 10, [], []) == (2, 0, 7)  # the second is over the limit
    assert read_plain_run(encode_frame(Version("x")), 0, 10, [], []) == (0, 0, 0)
    assert read_plain_run(b"\x03", 0, 10, [], []) == (0, 0, 0)


def test_take_buffer_hands_over_the_held_bytes() -> None:
    data = encode_frame(Message(8, 1, (), bytes(100)))
    reader = FrameReader()
    assert reader.take_buffer(data[:10]) == data[:10] and reader.buffered == 0
    assert reader.feed(data[:10]) == [] and reader.buffered == 10
    assert reader.take_buffer(data[10:]) == data and reader.buffered == 0
    assert reader.feed(data) == [Message(8, 1, (), bytes(100))]


@pytest.mark.pure_python  # counts calls of a module function by patching it
@pytest.mark.parametrize("attachments", [(), (5,)])
def test_a_large_message_in_small_chunks_is_joined_and_parsed_once(
    attachments: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    import aqueduct.wire.reader as reader_module

    parses = 0
    real = reader_module._read_frames

    def counting(*args: object) -> tuple[int, int]:
        nonlocal parses
        parses += 1
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(reader_module, "_read_frames", counting)
    msg = Message(3, 7, attachments, bytes(100_000))
    data = encode_frame(msg)
    reader = FrameReader()
    out = [f for i in range(0, len(data), 100) for f in reader.feed(data[i : i + 100])]
    assert out == [msg] and parses == 2  # the first piece (the length is known from then on), the last

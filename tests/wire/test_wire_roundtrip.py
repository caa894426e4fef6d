"""Round trips: every frame type, var len ints, range data, header data,
channel IDs and the minter. Encoding then decoding gives the value back;
decoding then encoding gives the bytes back; the minimality and zero rules
hold for everything the encoder writes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wire_strategies import FRAME_STRATEGIES, frame_lists, frames, headers, ranges, u64

from aqueduct.wire import (
    ENTRYPOINT,
    MAX_VARINT,
    AckReliable,
    ChannelId,
    ChannelIdMinter,
    ConnectionControl,
    Frame,
    FrameType,
    Message,
    ProtocolError,
    Side,
    decode_frames,
    decode_varint,
    encode_frame,
    encode_frames,
    encode_headers,
    encode_message,
    encode_varint,
    ranges_to_runs,
    runs_to_ranges,
    validate_ranges,
)
from aqueduct.wire.frames import message_head, plain_message_prefix
from aqueduct.wire.vectors import frame_from_json, frame_to_json


@pytest.mark.spec("frames.encoding")
@pytest.mark.parametrize("name", list(FRAME_STRATEGIES))
@given(data=st.data())
def test_frame_round_trip(name: str, data: st.DataObject) -> None:
    frame = data.draw(FRAME_STRATEGIES[name])
    encoded = encode_frame(frame)
    assert encoded[0] == FrameType[_snake(name)]
    assert decode_frames(encoded) == [frame]
    assert encode_frames(decode_frames(encoded)) == encoded


@pytest.mark.spec("frames.encoding")
@given(frame_lists)
def test_frames_back_to_back_round_trip(fs: list[Frame]) -> None:
    data = encode_frames(fs)
    assert decode_frames(data) == fs
    assert encode_frames(decode_frames(data)) == data


@given(frames)
def test_frame_json_round_trip(frame: Frame) -> None:
    assert frame_from_json(frame_to_json(frame)) == frame


@given(u64, u64, st.lists(u64, max_size=5), st.binary(max_size=200))
def test_encode_message_matches_dataclass_encoding(channel: int, number: int, att: list[int], payload: bytes) -> None:
    assert encode_message(channel, number, att, payload) == encode_frame(Message(channel, number, tuple(att), payload))


@given(u64, u64, st.binary(max_size=300))
def test_plain_message_prefix_and_payload_are_the_message_frame(channel: int, number: int, payload: bytes) -> None:
    prefix = plain_message_prefix(message_head(channel), number, len(payload))
    assert prefix + payload == encode_frame(Message(channel, number, (), payload))


def test_plain_message_prefix_stays_right_as_its_cache_of_high_bits_fills_and_empties() -> None:
    head = message_head(5)
    for number in [*range(0, 1100 * 128, 61), *range(2**21 - 300, 2**21 + 300), *range(2**28 - 300, 2**28 + 300)]:
        assert plain_message_prefix(head, number, 64) + b"p" * 64 == encode_frame(Message(5, number, (), b"p" * 64))


@pytest.mark.spec("encoding.varint")
@given(u64)
def test_varint_round_trip_and_minimal_length(value: int) -> None:
    data = encode_varint(value)
    assert decode_varint(data) == value
    assert len(data) == max(1, -(-value.bit_length() // 7))
    assert all(b & 0x80 for b in data[:-1]) and not data[-1] & 0x80
    assert len(data) == 1 or data[-1] != 0


@pytest.mark.spec("encoding.varint")
@given(u64, st.integers(1, 9))
def test_varint_padded_with_zero_groups_is_rejected(value: int, pad: int) -> None:
    data = bytearray(encode_varint(value))
    data[-1] |= 0x80
    padded = bytes(data) + b"\x80" * (pad - 1) + b"\x00"
    with pytest.raises(ProtocolError):
        decode_varint(padded)


@pytest.mark.spec("encoding.varint")
@given(st.integers(MAX_VARINT + 1, 1 << 80))
def test_varint_beyond_64_bits_is_rejected(value: int) -> None:
    out = bytearray()
    rest = value
    while True:
        low, rest = rest & 0x7F, rest >> 7
        out.append(low | (0x80 if rest else 0))
        if not rest:
            break
    with pytest.raises(ProtocolError):
        decode_varint(bytes(out))
    with pytest.raises(ValueError):
        encode_varint(value)


@pytest.mark.spec("encoding.varint")
@pytest.mark.parametrize("value", [-1, MAX_VARINT + 1])
def test_encode_varint_refuses_out_of_range(value: int) -> None:
    with pytest.raises(ValueError):
        encode_varint(value)


@pytest.mark.spec("encoding.ranges")
@given(ranges(), u64)
def test_ranges_round_trip_through_runs(rs: tuple[int, ...], start: int) -> None:
    validate_ranges(rs)
    runs = list(ranges_to_runs(start, rs))
    assert all(stop > first for first, stop, _ in runs)
    assert runs_to_ranges(start, runs) == list(rs)
    assert decode_frames(encode_frame(AckReliable(rs))) == [AckReliable(rs)]


@pytest.mark.spec("encoding.ranges")
@given(st.lists(st.integers(0, 50), min_size=1, max_size=10))
def test_zero_rule(rs: list[int]) -> None:
    ok = all(r or (i == 0 and len(rs) > 1) for i, r in enumerate(rs))
    if ok:
        validate_ranges(rs)
    else:
        with pytest.raises(ProtocolError):
            validate_ranges(rs)


@pytest.mark.spec("encoding.ranges")
def test_runs_to_ranges_merges_and_leads_with_zero() -> None:
    assert runs_to_ranges(10, [(10, 12, False), (12, 13, True), (13, 15, True)]) == [0, 2, 3]
    assert runs_to_ranges(0, [(0, 2, True), (2, 2, False), (2, 5, True)]) == [5]
    with pytest.raises(ValueError):
        runs_to_ranges(0, [(1, 2, True)])


@pytest.mark.spec("encoding.headers")
@given(headers)
def test_headers_round_trip_keep_order_and_duplicates(hs: tuple[tuple[str, bytes], ...]) -> None:
    doubled = hs + hs
    assert decode_frames(b"\x01" + encode_headers(doubled)) == [ConnectionControl(doubled)]


@pytest.mark.spec("encoding.headers")
@pytest.mark.parametrize("key", ["", "é", "\x80"])
def test_encoder_refuses_bad_header_keys(key: str) -> None:
    with pytest.raises(ValueError):
        encode_headers([(key, b"")])


@pytest.mark.spec("channel-id.bits")
@given(st.sampled_from(list(Side)), st.sampled_from(list(Side)), st.booleans(), st.integers(0, (1 << 61) - 1))
def test_channel_id_fields(to: Side, minted_by: Side, oneshot: bool, index: int) -> None:
    cid = ChannelId.make(to=to, minted_by=minted_by, oneshot=oneshot, index=index)
    assert (cid.to, cid.minted_by, cid.oneshot, cid.index) == (to, minted_by, oneshot, index)
    assert cid.direction == ("to_server" if to is Side.SERVER else "to_client")
    assert 0 <= cid <= MAX_VARINT
    assert decode_varint(encode_varint(cid)) == cid


@pytest.mark.spec("channel-id.bits")
def test_channel_id_bits_follow_the_spec() -> None:
    cid = ChannelId.make(to=Side.CLIENT, minted_by=Side.SERVER, oneshot=True, index=5)
    assert cid == 5 << 3 | 0b111
    assert ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=0) == ENTRYPOINT == 0
    with pytest.raises(ValueError):
        ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=1 << 61)


@pytest.mark.spec("channel-id.minting")
@pytest.mark.parametrize("side", list(Side))
def test_minter_counts_each_space_from_zero_except_the_entrypoint(side: Side) -> None:
    minter = ChannelIdMinter(side)
    for to in Side:
        for oneshot in (False, True):
            ids = [minter.mint(to=to, oneshot=oneshot) for _ in range(3)]
            first = 1 if (side, to, oneshot) == (Side.CLIENT, Side.SERVER, False) else 0
            assert [c.index for c in ids] == [first, first + 1, first + 2]
            assert all((c.to, c.minted_by, c.oneshot) == (to, side, oneshot) for c in ids)
            assert len({c.space for c in ids}) == 1


@pytest.mark.spec("channel-id.minting")
def test_a_minter_copy_mints_on_its_own() -> None:
    minter = ChannelIdMinter(Side.CLIENT)
    minter.mint(to=Side.SERVER)
    twin = minter.copy()
    assert twin.mint(to=Side.SERVER) == minter.mint(to=Side.SERVER)  # same state
    twin.mint(to=Side.CLIENT, oneshot=True)
    assert minter.mint(to=Side.CLIENT, oneshot=True).index == 0  # the copy's mints leave the original alone
    assert twin.side is Side.CLIENT


def _snake(name: str) -> str:
    return "".join("_" + c if c.isupper() and i else c for i, c in enumerate(name)).upper()

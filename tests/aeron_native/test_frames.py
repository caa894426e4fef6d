"""The Aeron wire codec: round trips, alignment, real-driver layouts, garbage rejected with a typed error."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeron_compat.native.codec import decode_datagram, decode_frame, encode_datagram, encode_frame
from aeron_compat.native.frames import (
    AeronWireError,
    DataFrame,
    ErrorFrame,
    Flags,
    Frame,
    FrameType,
    Heartbeat,
    Nak,
    PadFrame,
    ResEntry,
    Resolution,
    ResponseSetup,
    Rttm,
    Setup,
    StatusMessage,
    UnknownFrame,
)

i32 = st.integers(-(2**31), 2**31 - 1)
u31 = st.integers(0, 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
u8 = st.integers(0, 255)

data_frames = st.builds(DataFrame, u31, i32, i32, i32, st.binary(max_size=200), u8, i64)
heartbeats = st.builds(Heartbeat, u31, i32, i32, i32, u8, i64)
pads = st.builds(PadFrame, u31, i32, i32, i32, st.integers(32, 2**31 - 1), u8, i64)
naks = st.builds(Nak, i32, i32, i32, u31, i32, u8)
sms = st.one_of(
    st.builds(StatusMessage, i32, i32, i32, u31, i32, st.none(), st.none(), u8),
    st.builds(StatusMessage, i32, i32, i32, u31, i32, i64, st.one_of(st.none(), i64), u8),
)
errs = st.builds(ErrorFrame, i32, i32, i64, i64, i32, st.binary(max_size=100), u8)
setups = st.builds(Setup, u31, i32, i32, i32, i32, i32, i32, i32, u8)
rttms = st.builds(Rttm, i32, i32, i64, i64, i64, u8)
res_entries = st.one_of(
    st.builds(ResEntry, st.just(1), u8, st.integers(0, 65535), i32, st.binary(min_size=4, max_size=4),
              st.binary(max_size=40)),
    st.builds(ResEntry, st.just(2), u8, st.integers(0, 65535), i32, st.binary(min_size=16, max_size=16),
              st.binary(max_size=40)),
)
resolutions = st.builds(Resolution, st.lists(res_entries, max_size=4).map(tuple), u8)
rsp_setups = st.builds(ResponseSetup, i32, i32, i32, u8)
unknowns = st.builds(UnknownFrame, st.sampled_from([0x08, 0x09, 0x0A, 0x0C, 0x1234, 0xFFFF]), u8,
                     st.binary(max_size=50))
any_frame = st.one_of(data_frames, heartbeats, pads, naks, sms, errs, setups, rttms, resolutions, rsp_setups,
                      unknowns)


@given(any_frame)
def test_every_frame_round_trips(frame: Frame) -> None:
    assert decode_frame(encode_frame(frame)) == frame


@given(st.lists(st.one_of(data_frames, heartbeats), min_size=1, max_size=6), pads)
def test_datagrams_of_data_frames_round_trip_with_32_byte_alignment(frames: list[Frame], pad: PadFrame) -> None:
    wire = encode_datagram([*frames, pad])
    assert decode_datagram(wire) == [*frames, pad]
    offsets = [0]
    for f in frames:
        offsets.append(offsets[-1] + ((len(encode_frame(f)) + 31) & ~31))
    assert len(wire) == offsets[-1] + 32  # the PAD travels as a bare header, last in the datagram


def test_layouts_match_the_real_driver() -> None:
    # sizes and flag values as real Aeron drivers put them on the wire
    assert len(encode_frame(DataFrame(0, 1, 2, 3, b"x" * 19))) == 51
    assert len(encode_datagram([DataFrame(0, 1, 2, 3, b"x" * 19)])) == 51
    assert len(encode_datagram([DataFrame(0, 1, 2, 3, b"x" * 19), Heartbeat(64, 1, 2, 3)])) == 96
    assert len(encode_frame(Nak(1, 2, 3, 4, 5))) == 28
    assert len(encode_frame(StatusMessage(1, 2, 3, 4, 5, None))) == 28
    assert len(encode_frame(StatusMessage(1, 2, 3, 4, 5, 99))) == 36
    assert len(encode_frame(StatusMessage(1, 2, 3, 4, 5, 99, 7))) == 44
    assert len(encode_frame(Setup(0, 1, 2, 3, 3, 65536, 1408))) == 40
    assert len(encode_frame(Rttm(1, 2, 3, 4, 5))) == 40
    assert len(encode_frame(ErrorFrame(1, 2, 3, 4, 5, b"boom"))) == 44
    assert len(encode_frame(ResponseSetup(1, 2, 3))) == 20
    hb = encode_frame(Heartbeat(64, 1, 2, 3, Flags.UNFRAGMENTED | Flags.EOS))
    assert struct.unpack_from("<iBBH", hb) == (0, 0, 0xE0, FrameType.DATA)
    assert decode_frame(hb) == Heartbeat(64, 1, 2, 3, 0xE0)
    assert decode_frame(hb).end_of_stream  # type: ignore[union-attr]


def test_unknown_types_are_returned_for_ignoring() -> None:
    wire = struct.pack("<iBBH", 12, 0, 0, 0x0A) + b"abcd"
    assert decode_frame(wire) == UnknownFrame(0x0A, 0, b"abcd")


@pytest.mark.parametrize(
    "wire",
    [
        b"\x01\x02\x03",  # shorter than a header
        struct.pack("<iBBH", -5, 0, 0, 1) + bytes(24),  # negative length
        struct.pack("<iBBH", 64, 0, 0xC0, 1) + bytes(24),  # DATA longer than the datagram
        struct.pack("<iBBH", 20, 0, 0xC0, 1) + bytes(24),  # DATA shorter than its header
        struct.pack("<iBBH", 36, 1, 0, 3) + bytes(28),  # version 1
        struct.pack("<iBBH", 40, 0, 0, 3) + bytes(32),  # SM of an unsupported length
        struct.pack("<iBBH", 20, 0, 0, 2) + bytes(12),  # NAK too short
        struct.pack("<iBBH", 44, 0, 0, 4) + bytes(24) + struct.pack("<ii", 0, 99) + bytes(4),  # ERR text overruns
        struct.pack("<iBBH", 4, 0, 0, 0x0A),  # unknown type shorter than a header
        struct.pack("<iBBH", 20, 0, 0, 7) + struct.pack("<BBHi", 9, 0, 0, 0) + bytes(4),  # RES entry type 9
        struct.pack("<iBBH", 22, 0, 0, 7) + struct.pack("<BBHi", 1, 0, 0, 0) + bytes(4) + struct.pack("<h", 9),
    ],
)
def test_malformed_datagrams_raise_the_typed_error(wire: bytes) -> None:
    with pytest.raises(AeronWireError):
        decode_datagram(wire)


@given(st.binary(max_size=300))
def test_garbage_never_raises_anything_else(wire: bytes) -> None:
    try:
        frames = decode_datagram(wire)
    except AeronWireError:
        return
    assert all(isinstance(f, Frame) for f in frames)


@given(any_frame, st.data())
def test_truncated_or_mutated_frames_never_raise_anything_else(frame: Frame, data: st.DataObject) -> None:
    wire = bytearray(encode_frame(frame))
    cut = data.draw(st.integers(0, len(wire)))
    for _ in range(data.draw(st.integers(0, 3))):
        wire[data.draw(st.integers(0, len(wire) - 1))] = data.draw(u8)
    try:
        decode_datagram(bytes(wire[:cut]))
    except AeronWireError:
        pass

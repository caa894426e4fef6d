"""Hostile bytes: random garbage and mutated valid frames either decode or
raise ProtocolError, never anything else; what decodes re-encodes to exactly
the same bytes (decoding is strict, so only canonical bytes are accepted);
and the stream reader, chunked at random, agrees with whole decoding."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wire_strategies import frame_lists, split

from aqueduct.wire import Frame, FrameReader, ProtocolError, decode_frames, encode_frames

FUZZ = settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])


def outcome_whole(data: bytes) -> list[Frame] | None:
    """The frames, or None for a ProtocolError; any other exception fails the test."""
    try:
        return decode_frames(data)
    except ProtocolError:
        return None


def outcome_stream(data: bytes, cuts: list[int]) -> list[Frame] | None:
    reader = FrameReader()
    out: list[Frame] = []
    try:
        for chunk in split(data, cuts):
            out += reader.feed(chunk)
        reader.finish()
    except ProtocolError:
        return None
    return out


def check(data: bytes, cuts: list[int]) -> None:
    frames = outcome_whole(data)
    if frames is not None:
        assert frames and encode_frames(frames) == data
    assert outcome_stream(data, cuts) == frames


# Byte soup biased toward frame type bytes, continuation bytes and small lengths.
soup = st.lists(
    st.one_of(st.integers(0, 255), st.sampled_from([0, 1, 2, 3, 5, 8, 9, 0x7F, 0x80, 0x81, 0xFF, 0xEF])), max_size=48
).map(bytes)


@pytest.mark.spec("frames.decoding")
@FUZZ
@given(soup, st.lists(st.integers(0, 100), max_size=6))
def test_garbage_raises_only_protocol_error(data: bytes, cuts: list[int]) -> None:
    check(data, cuts)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(encode_frames(draw(frame_lists)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate", "append"]))
        i = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and data:
            data[i] = draw(st.integers(0, 255))
        elif op == "insert":
            data.insert(i, draw(st.integers(0, 255)))
        elif op == "delete" and data:
            del data[i]
        elif op == "truncate":
            del data[i:]
        elif op == "append":
            data += draw(st.binary(min_size=1, max_size=4))
    return bytes(data)


@pytest.mark.spec("frames.decoding")
@FUZZ
@given(mutated(), st.lists(st.integers(0, 1000), max_size=6))
def test_mutated_frames_raise_only_protocol_error(data: bytes, cuts: list[int]) -> None:
    check(data, cuts)

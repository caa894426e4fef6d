"""The batch codec for frames on Aqueduct: round trips, and garbage raises only BatchError."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeron_compat.client.logbuffer import TermAppender
from aeron_compat.media.batch import BatchError, decode_batch, encode_batch

TERM = 65536


@given(st.lists(st.binary(max_size=3000), max_size=8), st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**31 - 1))
def test_round_trip(messages: list[bytes], initial: int, start_units: int) -> None:
    appender = TermAppender(TERM, initial, 1408, (start_units % 1000) * 32)
    frames = []
    for m in messages:
        pad = appender.pad_if_needed(appender.required(len(m)))
        if pad is not None:
            frames.append(pad)
        frames.extend(appender.append(m, reserved_value=len(m)))
    if frames:
        assert decode_batch(encode_batch(frames), initial, TERM) == frames


def test_frames_are_much_smaller_than_aeron_headers() -> None:
    frames = [f for _ in range(10) for f in TermAppender(TERM, 0, 1408).append(bytes(32))]
    assert len(encode_batch(frames[:1])) == 8 + 5 + 32


@pytest.mark.parametrize(
    "data",
    [b"", b"\x01" * 7, (33).to_bytes(8, "little") + b"\xc1\x40\x00\x00\x00",
     bytes(8) + b"\xc5\x40\x00\x00\x00" + bytes(32), bytes(8) + b"\xc1\x10\x00\x00\x00",
     bytes(8) + b"\xc0\x21\x00\x00\x00", bytes(8) + b"\xc1\x00\x00\x02\x00" + bytes(131072),
     bytes(8) + b"\xc3\x20\x00\x00\x00\x01"],
    ids=["empty", "short", "unaligned-start", "unknown-bits", "short-data", "odd-padding", "crosses-term",
         "truncated-reserved"],
)
def test_malformed_batches_are_refused(data: bytes) -> None:
    with pytest.raises(BatchError):
        decode_batch(data, 0, TERM)


@given(st.binary(max_size=200))
def test_garbage_raises_only_batch_error(data: bytes) -> None:
    try:
        decode_batch(data, 0, TERM)
    except BatchError:
        pass


@given(st.data())
def test_mutations_raise_only_batch_error(data: st.DataObject) -> None:
    frames = TermAppender(TERM, 0, 96).append(bytes(200))
    raw = bytearray(encode_batch(frames))
    i = data.draw(st.integers(0, len(raw) - 1))
    raw[i] = data.draw(st.integers(0, 255))
    try:
        decode_batch(bytes(raw), 0, TERM)
    except BatchError:
        pass


def test_non_bytes_refused() -> None:
    with pytest.raises(BatchError):
        decode_batch("text", 0, TERM)  # type: ignore[arg-type]

"""The batch codec for frames on Aqueduct: round trips, and garbage raises only BatchError."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeron_compat.batch import BatchError, decode_batch, encode_batch
from aeron_compat.logbuffer import TermAppender

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
    data = encode_batch(frames, 7, 9)
    assert decode_batch(data, 7, 9, initial, TERM) == frames


def test_wrong_session_is_refused() -> None:
    frames = TermAppender(TERM, 0, 1408).append(b"abc")
    with pytest.raises(BatchError):
        decode_batch(encode_batch(frames, 7, 9), 8, 9, 0, TERM)


@given(st.binary(max_size=200))
def test_garbage_raises_only_batch_error(data: bytes) -> None:
    try:
        decode_batch(data, 7, 9, 0, TERM)
    except BatchError:
        pass


@given(st.data())
def test_mutations_raise_only_batch_error(data: st.DataObject) -> None:
    frames = TermAppender(TERM, 0, 96).append(bytes(200))
    raw = bytearray(encode_batch(frames, 7, 9))
    i = data.draw(st.integers(0, len(raw) - 1))
    raw[i] = data.draw(st.integers(0, 255))
    try:
        decode_batch(bytes(raw), 7, 9, 0, TERM)
    except BatchError:
        pass


def test_non_bytes_refused() -> None:
    with pytest.raises(BatchError):
        decode_batch("text", 7, 9, 0, TERM)  # type: ignore[arg-type]

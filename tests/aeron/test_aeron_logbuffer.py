"""Term arithmetic and the appender: aligned positions, fragment layout, padding at term end."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aeron_compat.client.codes import BEGIN_FLAG, END_FLAG, HDR_TYPE_DATA, HDR_TYPE_PAD, align
from aeron_compat.client.logbuffer import (
    TermAppender,
    compute_position,
    frames_length,
    max_message_length,
    max_possible_position,
    position_bits_to_shift,
    term_id_of,
    term_offset_of,
)


def test_frame_of_19_bytes_occupies_64() -> None:
    appender = TermAppender(65536, 0, 1408)
    (frame,) = appender.append(b"x" * 19)
    assert frame.length == 51 and frame.next_position == 64 and appender.tail == 64


@given(st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**31 - 2), st.sampled_from([16, 17, 20, 24]),
       st.integers(0, 2**16 - 1))
def test_position_and_term_round_trip(initial: int, term_count: int, bits: int, offset_units: int) -> None:
    term_length = 1 << bits
    offset = (offset_units * 32) % term_length
    term_id = ((initial + term_count + 2**31) % 2**32) - 2**31
    position = compute_position(term_id, offset, bits, initial)
    assert position == term_count * term_length + offset
    assert term_id_of(position, bits, initial) == term_id
    assert term_offset_of(position, term_length) == offset
    assert position < max_possible_position(term_length)


@given(st.integers(0, 8192), st.sampled_from([64, 96, 1408, 4096]))
def test_fragments_cover_the_message_with_b_and_e_flags(length: int, mtu: int) -> None:
    appender = TermAppender(1 << 16, 7, mtu)
    data = bytes(i % 251 for i in range(length))
    frames = appender.append(data)
    assert b"".join(f.payload for f in frames) == data
    assert frames[0].flags & BEGIN_FLAG and frames[-1].flags & END_FLAG
    assert all(f.flags & (BEGIN_FLAG | END_FLAG) == 0 for f in frames[1:-1])
    assert all(len(f.payload) == mtu - 32 for f in frames[:-1])
    assert all(f.position % 32 == 0 and f.frame_type == HDR_TYPE_DATA for f in frames)
    assert appender.tail == frames_length(length, mtu - 32) == sum(align(f.length) for f in frames)


def test_message_that_does_not_fit_pads_the_term() -> None:
    appender = TermAppender(65536, 3, 1408)
    appender.tail = 65536 - 64
    assert appender.pad_if_needed(64) is None
    pad = appender.pad_if_needed(96)
    assert pad is not None and pad.frame_type == HDR_TYPE_PAD and pad.length == 64
    assert appender.tail == 65536
    (frame,) = appender.append(b"y")
    assert frame.term_id == 4 and frame.term_offset == 0


def test_max_message_length_is_an_eighth_of_the_term() -> None:
    assert max_message_length(65536) == 8192
    assert max_message_length(1 << 30) == 16 * 1024 * 1024
    assert position_bits_to_shift(65536) == 16

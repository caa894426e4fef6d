# Term arithmetic and the appender that turns a message into frames.
# A stream is a sequence of terms of `term_length` bytes; position = (term_id - initial_term_id) *
# term_length + term_offset.  Every frame is a 32-byte header plus payload, aligned to 32 bytes.
# A message longer than the MTU payload becomes B..E fragments; a message never straddles a term:
# if it does not fit, the rest of the term becomes a padding frame and the caller reports
# ADMIN_ACTION (the term rotated), exactly as Aeron does.  Frames are immutable tuples so one
# frame object can be handed to every image of a publication without copying.
"""Positions, term ids/offsets, frames and the term appender."""

from __future__ import annotations

from typing import NamedTuple

from .codes import BEGIN_FLAG, END_FLAG, HDR_TYPE_DATA, HDR_TYPE_PAD, HEADER_LENGTH, MAX_MESSAGE_CAP, align


class Frame(NamedTuple):
    """One frame of a stream: where it starts and what its header says."""

    position: int
    term_id: int
    term_offset: int
    flags: int
    frame_type: int
    reserved_value: int
    length: int
    payload: bytes

    @property
    def next_position(self) -> int:
        """Position just after this frame (aligned)."""
        return self.position + align(self.length)


def _wrap32(n: int) -> int:
    return ((n + 2**31) % 2**32) - 2**31


def position_bits_to_shift(term_length: int) -> int:
    """log2(term_length)."""
    return term_length.bit_length() - 1


def compute_position(active_term_id: int, term_offset: int, bits: int, initial_term_id: int) -> int:
    """Stream position of `term_offset` in `active_term_id` (term ids wrap like int32)."""
    term_count = _wrap32(active_term_id - initial_term_id)
    return (term_count << bits) + term_offset


def term_id_of(position: int, bits: int, initial_term_id: int) -> int:
    """Term id holding `position`."""
    return _wrap32(initial_term_id + (position >> bits))


def term_offset_of(position: int, term_length: int) -> int:
    """Offset of `position` within its term."""
    return position & (term_length - 1)


def max_possible_position(term_length: int) -> int:
    """Positions stop here: term ids may not wrap back to the initial one."""
    return term_length << 31


def max_message_length(term_length: int) -> int:
    """Longest message a publication accepts: an eighth of a term, at most 16 MiB."""
    return min(term_length // 8, MAX_MESSAGE_CAP)


def frames_length(length: int, max_payload: int) -> int:
    """Aligned bytes a message of `length` occupies in the log."""
    full, rest = divmod(length, max_payload)
    total = full * align(HEADER_LENGTH + max_payload)
    if rest or not full:
        total += align(HEADER_LENGTH + rest)
    return total


class TermAppender:
    """The tail of one stream: appends messages as frames and answers position questions."""

    def __init__(self, term_length: int, initial_term_id: int, mtu: int, start_position: int = 0) -> None:
        self.term_length = term_length
        self.initial_term_id = initial_term_id
        self.bits = position_bits_to_shift(term_length)
        self.max_payload = mtu - HEADER_LENGTH
        self.max_position = max_possible_position(term_length)
        self.mask = term_length - 1
        self.tail = start_position
        self._term_base = -1
        self._cached_term_id = initial_term_id

    def term_id_at(self, position: int) -> int:
        """Term id of `position`, cached for the current term."""
        base = position & ~self.mask
        if base != self._term_base:
            self._term_base = base
            self._cached_term_id = term_id_of(position, self.bits, self.initial_term_id)
        return self._cached_term_id

    def required(self, length: int) -> int:
        """Aligned log bytes for a message of `length`."""
        return frames_length(length, self.max_payload)

    def pad_if_needed(self, required: int) -> Frame | None:
        """A padding frame to the end of the term if `required` bytes do not fit; advances the tail."""
        offset = self.tail & (self.term_length - 1)
        if offset + required <= self.term_length:
            return None
        pad = Frame(self.tail, self._term_id(), offset, BEGIN_FLAG | END_FLAG, HDR_TYPE_PAD, 0,
                    self.term_length - offset, b"")
        self.tail += self.term_length - offset
        return pad

    def _term_id(self) -> int:
        return self.term_id_at(self.tail)

    def append(self, data: bytes, reserved_value: int = 0) -> list[Frame]:
        """Frames for `data` at the tail (the caller checked it fits in this term); advances the tail."""
        size, max_payload, mask = len(data), self.max_payload, self.term_length - 1
        if size <= max_payload:
            pos = self.tail
            frame = Frame(pos, self.term_id_at(pos), pos & mask, BEGIN_FLAG | END_FLAG, HDR_TYPE_DATA,
                          reserved_value, HEADER_LENGTH + size, data)
            self.tail = pos + align(HEADER_LENGTH + size)
            return [frame]
        frames = []
        for start in range(0, size, max_payload):
            chunk = data[start : start + max_payload]
            flags = (BEGIN_FLAG if start == 0 else 0) | (END_FLAG if start + max_payload >= size else 0)
            pos = self.tail
            frames.append(Frame(pos, self.term_id_at(pos), pos & mask, flags, HDR_TYPE_DATA, reserved_value,
                                HEADER_LENGTH + len(chunk), chunk))
            self.tail = pos + align(HEADER_LENGTH + len(chunk))
        return frames

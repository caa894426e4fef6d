"""Term buffers and stream positions, shared by the publisher and the image.

Theory: a stream is a sequence of terms of `term_length` bytes (a power of
two, 64 KiB to 1 GiB); term ids start at a random `initial_term_id` and count
up (wrapping as int32). A position is a byte count since the start of the
initial term: `(term_id - initial_term_id) * term_length + term_offset`. Three
partitions hold the current term, the one before (for retransmits) and the one
after (clean, ready for rotation). Frames sit in the partitions exactly as on
the wire: a 32-byte header whose length field is 0 until the frame is present.
"""

from __future__ import annotations

import struct

from aeron_compat.native.frames import DATA_HEADER, FrameType, align

PARTITIONS = 3
MIN_TERM_LENGTH = 64 * 1024
MAX_TERM_LENGTH = 1024 * 1024 * 1024
FRAME_LENGTH = struct.Struct("<i")
TYPE_AT = struct.Struct("<H")
MAX_MESSAGE_LENGTH = 16 * 1024 * 1024


def check_term_length(term_length: int) -> None:
    """Raise ValueError unless `term_length` is a power of two in Aeron's allowed range."""
    if not MIN_TERM_LENGTH <= term_length <= MAX_TERM_LENGTH or term_length & (term_length - 1):
        raise ValueError(f"term length {term_length} must be a power of two from 64 KiB to 1 GiB")


def wrap32(value: int) -> int:
    """Wrap an integer to a signed 32-bit term id."""
    return (value + 2**31) % 2**32 - 2**31


def max_message_length(term_length: int) -> int:
    """The largest message a stream with this term length carries (Aeron: term/8, at most 16 MiB)."""
    return min(term_length // 8, MAX_MESSAGE_LENGTH)


class TermLog:
    """Three term partitions with position arithmetic for one stream."""

    def __init__(self, term_length: int, initial_term_id: int) -> None:
        check_term_length(term_length)
        self.term_length = term_length
        self.initial_term_id = initial_term_id
        self.shift = term_length.bit_length() - 1
        self.terms = [bytearray(term_length) for _ in range(PARTITIONS)]

    def position(self, term_id: int, term_offset: int) -> int:
        """Stream position of (term_id, term_offset)."""
        return (wrap32(term_id - self.initial_term_id) << self.shift) + term_offset

    def term_id(self, position: int) -> int:
        """Term id holding `position`."""
        return wrap32(self.initial_term_id + (position >> self.shift))

    def term_offset(self, position: int) -> int:
        """Offset of `position` within its term."""
        return position & (self.term_length - 1)

    def partition(self, position: int) -> bytearray:
        """The partition buffer that holds `position`."""
        return self.terms[(position >> self.shift) % PARTITIONS]

    def frame_at(self, position: int) -> tuple[int, int]:
        """(frame_length, type) of the frame stored at `position`; length 0 when absent."""
        buf = self.partition(position)
        off = self.term_offset(position)
        return FRAME_LENGTH.unpack_from(buf, off)[0], TYPE_AT.unpack_from(buf, off + 6)[0]

    def scan_complete(self, start: int, limit: int) -> int:
        """Position after the run of present frames from `start`, stopping at `limit` or a hole."""
        pos = start
        while pos < limit:
            length, _ = self.frame_at(pos)
            if length <= 0:
                break
            pos += align(length)
        return pos

    def write_header(self, position: int, frame_length: int, flags: int, ftype: int, session_id: int,
                     stream_id: int, reserved_value: int) -> None:
        """Write a full data-frame header at `position` (the length field last, marking it present)."""
        buf = self.partition(position)
        off = self.term_offset(position)
        DATA_HEADER.pack_into(buf, off, 0, 0, flags, ftype, off, session_id, stream_id, self.term_id(position),
                              reserved_value)
        FRAME_LENGTH.pack_into(buf, off, frame_length)

    def write_padding(self, position: int, session_id: int, stream_id: int) -> None:
        """Fill the rest of the term from `position` with one PAD frame."""
        length = self.term_length - self.term_offset(position)
        self.write_header(position, length, 0xC0, FrameType.PAD, session_id, stream_id, 0)


# How frames travel inside one Aqueduct message.  The frames a sink sends are always contiguous
# (every frame of the log from the join position on, padding included), and the channel itself
# names the session and stream, so most of Aeron's 32-byte header is implied: a batch is the
# first frame's stream position (8 bytes), then per frame one byte of B/E/S flags + type (+ a bit
# saying a reserved value follows), the frame length (4 bytes), the reserved value if any
# (8 bytes) and, for data frames, the payload.  Positions, term ids and offsets are rebuilt from
# the start position and aligned lengths.  The decoder checks everything against the session's
# term length and raises BatchError (never anything else) on bytes it cannot trust.
"""Encoding and decoding batches of frames for the Aqueduct media."""

from __future__ import annotations

import struct

from ..client.codes import EOS_FLAG, HDR_TYPE_DATA, HEADER_LENGTH, UNFRAGMENTED, AeronError
from ..client.logbuffer import Frame, max_possible_position

_START = struct.Struct("<q")
_FRAME = struct.Struct("<BI")
_RESERVED = struct.Struct("<q")
HAS_RESERVED = 0x02
_FLAG_BITS = UNFRAGMENTED | EOS_FLAG
_new_frame = tuple.__new__


class BatchError(AeronError):
    """A received batch is malformed or impossible for its session."""


def encode_batch(frames: list[Frame]) -> bytes:
    """Contiguous frames as one message payload."""
    out = bytearray(_START.pack(frames[0].position))
    pack = _FRAME.pack
    for f in frames:
        if f.reserved_value:
            out += pack(f.flags | f.frame_type | HAS_RESERVED, f.length)
            out += _RESERVED.pack(f.reserved_value)
        else:
            out += pack(f.flags | f.frame_type, f.length)
        if f.frame_type == HDR_TYPE_DATA:
            out += f.payload
    return bytes(out)


def decode_batch(data: bytes, initial_term_id: int, term_length: int) -> list[Frame]:
    """Frames of one message payload, validated against the session's term length."""
    if not isinstance(data, bytes | bytearray) or len(data) < _START.size:
        raise BatchError("batch must be bytes holding at least a start position")
    bits = term_length.bit_length() - 1
    mask = term_length - 1
    limit = max_possible_position(term_length)
    (position,) = _START.unpack_from(data, 0)
    if position < 0 or position % 32:
        raise BatchError(f"bad start position {position}")
    frames = []
    offset, end = _START.size, len(data)
    unpack = _FRAME.unpack_from
    while offset < end:
        if end - offset < _FRAME.size:
            raise BatchError("truncated frame")
        kind, length = unpack(data, offset)
        offset += _FRAME.size
        if kind & ~(_FLAG_BITS | HAS_RESERVED | 1):
            raise BatchError(f"unknown frame bits 0x{kind:02x}")
        reserved = 0
        if kind & HAS_RESERVED:
            if end - offset < _RESERVED.size:
                raise BatchError("truncated reserved value")
            (reserved,) = _RESERVED.unpack_from(data, offset)
            offset += _RESERVED.size
        term_offset = position & mask
        if term_offset + length > term_length:
            raise BatchError(f"frame of {length} bytes crosses its term")
        if kind & 1 == HDR_TYPE_DATA:
            size = length - HEADER_LENGTH
            if size < 0 or size > end - offset:
                raise BatchError(f"bad data frame length {length}")
            payload = bytes(data[offset : offset + size])
            offset += size
        else:
            if length < HEADER_LENGTH or length % 32:
                raise BatchError(f"bad padding length {length}")
            payload = b""
        term_id = ((initial_term_id + (position >> bits) + 2**31) % 2**32) - 2**31
        frames.append(_new_frame(Frame, (position, term_id, term_offset, kind & _FLAG_BITS, kind & 1, reserved,
                                         length, payload)))
        position += (length + 31) & -32
        if position > limit:
            raise BatchError("frame beyond the stream's maximum position")
    return frames

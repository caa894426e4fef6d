# How frames travel inside one Aqueduct message: concatenated data frames in Aeron's header
# layout (little endian: length, version, flags, type, term offset, session, stream, term id,
# reserved value), each followed by its payload and no alignment padding (positions still count
# aligned lengths); padding frames travel as a bare header whose length is the padding.  The
# decoder checks every field against the session it belongs to and raises BatchError (never
# anything else) on bytes it cannot trust.
"""Encoding and decoding batches of frames for the Aqueduct media."""

from __future__ import annotations

import struct

from .codes import HDR_TYPE_DATA, HDR_TYPE_PAD, HEADER_LENGTH, AeronError
from .logbuffer import Frame, compute_position

_HEADER = struct.Struct("<iBBHiiiiq")


class BatchError(AeronError):
    """A received batch is malformed or does not belong to its session."""


def encode_batch(frames: list[Frame], session_id: int, stream_id: int) -> bytes:
    """Frames as one message payload."""
    out = bytearray()
    pack = _HEADER.pack
    for f in frames:
        out += pack(f.length, 0, f.flags, f.frame_type, f.term_offset, session_id, stream_id, f.term_id,
                    f.reserved_value)
        if f.frame_type == HDR_TYPE_DATA:
            out += f.payload
    return bytes(out)


def decode_batch(data: bytes, session_id: int, stream_id: int, initial_term_id: int, term_length: int) -> list[Frame]:
    """Frames of one message payload, validated against the session."""
    if not isinstance(data, bytes | bytearray):
        raise BatchError(f"batch must be bytes, got {type(data).__name__}")
    bits = term_length.bit_length() - 1
    frames = []
    offset, end = 0, len(data)
    unpack = _HEADER.unpack_from
    while offset < end:
        if end - offset < HEADER_LENGTH:
            raise BatchError("truncated frame header")
        length, version, flags, ftype, term_offset, session, stream, term_id, reserved = unpack(data, offset)
        offset += HEADER_LENGTH
        if version != 0 or session != session_id or stream != stream_id:
            raise BatchError("frame of another version, session or stream")
        if term_offset < 0 or term_offset % 32 or term_offset >= term_length:
            raise BatchError(f"bad term offset {term_offset}")
        if ftype == HDR_TYPE_DATA:
            size = length - HEADER_LENGTH
            if size < 0 or size > end - offset or term_offset + length > term_length:
                raise BatchError(f"bad data frame length {length}")
            payload = bytes(data[offset : offset + size])
            offset += size
        elif ftype == HDR_TYPE_PAD:
            if length < HEADER_LENGTH or length % 32 or term_offset + length > term_length:
                raise BatchError(f"bad padding length {length}")
            payload = b""
        else:
            raise BatchError(f"unknown frame type {ftype}")
        position = compute_position(term_id, term_offset, bits, initial_term_id)
        if position < 0:
            raise BatchError("frame before the stream's start")
        frames.append(Frame(position, term_id, term_offset, flags, ftype, reserved, length, payload))
    return frames

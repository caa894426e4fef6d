"""Var len ints (LEB128, minimal, at most 64 bits) and var len byte arrays.

Readers take `(buf, pos)` and return `(value, new_pos)`. Running out of
bytes raises `Incomplete` (an incremental reader waits for more; a whole
buffer decoder turns it into a ProtocolError); malformed bytes raise
ProtocolError at once. Byte arrays declaring more than `limit` bytes are
rejected (LIMIT_EXCEEDED) before any of their bytes are awaited, so a
hostile length never makes us buffer. `read_int_array` reads a byte array
holding back-to-back var len ints (attachments, range data), converting it
in one step when every int fits in a byte.
"""

from __future__ import annotations

from collections.abc import Sequence

from .errors import CloseCode, ProtocolError, encoding_error

MAX_VARINT = (1 << 64) - 1

SMALL_VARINTS = [bytes([i]) for i in range(128)]
"""The encodings of 0..127 (one byte each), for hot paths that inline `encode_varint`."""


class Incomplete(Exception):
    """Internal: the buffer ends before the item does; `needed` is a lower bound on its total size."""

    def __init__(self, needed: int) -> None:
        super().__init__(needed)
        self.needed = needed


def encode_varint(value: int) -> bytes:
    """Encode `value` (0 to 2^64-1) as a minimal var len int."""
    if 0 <= value < 128:
        return SMALL_VARINTS[value]
    if 0 < value < 16384:  # (two and three bytes as one int: no tuple built; message numbers take these)
        return ((value & 0x7F) | 0x80 | (value >> 7) << 8).to_bytes(2, "little")
    if 0 < value < 2097152:
        return ((value & 0x7F) | 0x80 | ((value >> 7) & 0x7F | 0x80) << 8 | (value >> 14) << 16).to_bytes(3, "little")
    if value < 0 or value > MAX_VARINT:
        raise ValueError(f"var len int out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(buf: bytes, pos: int, base: int = 0) -> tuple[int, int]:
    """Read one var len int at `pos`; return (value, position after it).

    `base` is added to offsets named in errors (for ints inside an array that was sliced out of a larger buffer).
    """
    try:
        byte = buf[pos]
    except IndexError:
        raise Incomplete(pos + 1) from None
    if byte < 0x80:
        return byte, pos + 1
    end = len(buf)
    if pos + 1 < end:  # two or three bytes, minimal: the next common cases
        second = buf[pos + 1]
        if 0 < second < 0x80:
            return (byte & 0x7F) | (second << 7), pos + 2
        if second >= 0x80 and pos + 2 < end and 0 < buf[pos + 2] < 0x80:
            return (byte & 0x7F) | ((second & 0x7F) << 7) | (buf[pos + 2] << 14), pos + 3
    value = byte & 0x7F
    shift = 7
    start = pos
    pos += 1
    while True:
        if pos >= end:
            raise Incomplete(pos + 1)
        byte = buf[pos]
        pos += 1
        if shift == 63:
            # Tenth byte: only the 64th bit may remain, and it must be set.
            if byte != 0x01:
                raise encoding_error(
                    f"var len int at offset {base + start} has more than 64 bits"
                    if byte > 1
                    else f"var len int at offset {base + start} is not minimally encoded"
                )
            return value | (1 << 63), pos
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if byte == 0:
                raise encoding_error(f"var len int at offset {base + start} is not minimally encoded")
            return value, pos
        shift += 7


def decode_varint(data: bytes) -> int:
    """Decode a buffer holding exactly one var len int."""
    try:
        value, pos = read_varint(data, 0)
    except Incomplete:
        raise encoding_error("var len int is truncated") from None
    if pos != len(data):
        raise encoding_error(f"{len(data) - pos} trailing bytes after var len int")
    return value


def encode_bytes(data: bytes) -> bytes:
    """Encode a var len byte array."""
    return encode_varint(len(data)) + data


def read_bytes(buf: bytes, pos: int, limit: int, what: str, base: int = 0) -> tuple[bytes, int]:
    """Read a var len byte array of at most `limit` bytes; `what` names it in errors, `base` as in read_varint."""
    start = pos
    length, pos = read_varint(buf, pos, base)
    if length > limit:
        raise ProtocolError(
            f"{what} at offset {base + start} declares {length} bytes, beyond the limit of {limit}",
            CloseCode.LIMIT_EXCEEDED,
        )
    end = pos + length
    if end > len(buf):
        raise Incomplete(end)
    return buf[pos:end], end


def read_int_array(buf: bytes, pos: int, limit: int, what: str) -> tuple[tuple[int, ...], int]:
    """Read a var len byte array filled with var len ints; return (ints, position after the array)."""
    start = pos
    inner, pos = read_bytes(buf, pos, limit, what)
    if not inner or max(inner) < 0x80:
        return tuple(inner), pos
    base = pos - len(inner)
    out: list[int] = []
    ipos = 0
    n = len(inner)
    try:
        while ipos < n:
            value, ipos = read_varint(inner, ipos, base)
            out.append(value)
    except Incomplete:  # the array is complete, so a cut int is malformed
        raise encoding_error(f"{what} at offset {start} ends inside a var len int") from None
    return tuple(out), pos


def encode_int_array(ints: Sequence[int]) -> bytes:
    """Encode ints back to back inside a var len byte array."""
    inner = bytes(ints) if not ints or max(ints) < 0x80 else b"".join(encode_varint(i) for i in ints)
    return encode_varint(len(inner)) + inner

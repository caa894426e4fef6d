"""Header data: an ordered multimap of ASCII keys to byte values.

On the wire: one var len byte array holding back-to-back var len byte
arrays, alternately key and value. Keys must be non-empty ASCII; values are
any bytes; an odd number of inner arrays is malformed.

A peer's header data is read under `HeaderLimits` (EngineConfig's
max_header_bytes, max_headers, max_header_name_bytes, max_header_value_bytes):
the outer array's declared length is checked as soon as it arrives, before
its bytes are awaited (so at most max_header_bytes is ever buffered), and the
count and each key's and value's declared length while the inner arrays are
read, before each is kept. Past any of them: ProtocolError LIMIT_EXCEEDED.
So a peer's headers cost at most max_header_bytes plus a bounded number of
small objects, however they are cut up (5 million empty headers in 15 MB
once made ~360 MB of tuples).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .errors import CloseCode, ProtocolError, encoding_error
from .varint import Incomplete, encode_bytes, encode_varint, read_bytes

Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class HeaderLimits:
    """Caps on a peer's header data, checked while it is read (EngineConfig carries them as max_header_*)."""

    total_bytes: int = 256 * 1024
    """The encoded header data as a whole (max_header_bytes)."""
    count: int = 256
    """Key/value pairs (max_headers)."""
    name_bytes: int = 1024
    """One key (max_header_name_bytes; the spec's vectors hold a 300-byte key)."""
    value_bytes: int = 128 * 1024
    """One value (max_header_value_bytes); the `schema` header is the largest the library sends."""


DEFAULT_HEADER_LIMITS = HeaderLimits()


def normalize_headers(headers: Iterable[tuple[str, bytes]]) -> Headers:
    """Validate and freeze headers given by an application (raises ValueError)."""
    out = []
    for key, value in headers:
        if not key or not key.isascii():
            raise ValueError(f"header key must be non-empty ASCII: {key!r}")
        out.append((key, bytes(value)))
    return tuple(out)


def encode_headers(headers: Iterable[tuple[str, bytes]]) -> bytes:
    """Encode header data."""
    inner = b"".join(
        encode_bytes(key.encode("ascii")) + encode_bytes(value) for key, value in normalize_headers(headers)
    )
    return encode_varint(len(inner)) + inner


def read_headers(buf: bytes, pos: int, limits: HeaderLimits = DEFAULT_HEADER_LIMITS) -> tuple[Headers, int]:
    """Read header data at `pos` within `limits`; return (headers, position after it)."""
    start = pos
    inner, pos = read_bytes(buf, pos, limits.total_bytes, "header data (max_header_bytes)")
    base = pos - len(inner)
    out: list[tuple[str, bytes]] = []
    ipos, end = 0, len(inner)
    try:
        while ipos < end:
            if len(out) == limits.count:
                raise ProtocolError(f"header data at offset {start} holds more than {limits.count} headers "
                                    "(max_headers)", CloseCode.LIMIT_EXCEEDED)
            key, ipos = read_bytes(inner, ipos, limits.name_bytes, "header key (max_header_name_bytes)", base)
            if ipos == end:
                raise encoding_error(f"header data at offset {start} holds an odd number ({2 * len(out) + 1}) "
                                     "of byte arrays")
            value, ipos = read_bytes(inner, ipos, limits.value_bytes, "header value (max_header_value_bytes)", base)
            if not key:
                raise encoding_error(f"header key {len(out)} of the header data at offset {start} is empty")
            if not key.isascii():
                raise encoding_error(f"header key {len(out)} of the header data at offset {start} is not ASCII")
            out.append((key.decode("ascii"), value))
    except Incomplete:
        raise encoding_error(f"header data at offset {start} ends inside an item") from None
    return tuple(out), pos

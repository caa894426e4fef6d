"""Header data: an ordered multimap of ASCII keys to byte values.

On the wire: one var len byte array holding back-to-back var len byte
arrays, alternately key and value. Keys must be non-empty ASCII; values are
any bytes; an odd number of inner arrays is malformed.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import encoding_error
from .varint import Incomplete, encode_bytes, encode_varint, read_bytes

Headers = tuple[tuple[str, bytes], ...]


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


def read_headers(buf: bytes, pos: int, limit: int) -> tuple[Headers, int]:
    """Read header data at `pos`; return (headers, position after it)."""
    start = pos
    inner, pos = read_bytes(buf, pos, limit, "header data")
    base = pos - len(inner)
    items: list[bytes] = []
    ipos = 0
    try:
        while ipos < len(inner):
            item, ipos = read_bytes(inner, ipos, limit, "header item", base)
            items.append(item)
    except Incomplete:
        raise encoding_error(f"header data at offset {start} ends inside an item") from None
    if len(items) % 2:
        raise encoding_error(f"header data at offset {start} holds an odd number ({len(items)}) of byte arrays")
    out = []
    for i in range(0, len(items), 2):
        key = items[i]
        if not key:
            raise encoding_error(f"header key {i // 2} of the header data at offset {start} is empty")
        if not key.isascii():
            raise encoding_error(f"header key {i // 2} of the header data at offset {start} is not ASCII")
        out.append((key.decode("ascii"), items[i + 1]))
    return tuple(out), pos

"""Length-prefixed framing for the raw baselines: a varint length, then the payload.

`frame(payload)` builds one frame; `Deframer.feed(data)` returns the
complete payloads found so far and keeps the incomplete tail. Raw aioquic
and TCP peers use the same framing, the same as an Aqueduct Message frame
minus its channel and number fields.
"""

from __future__ import annotations

from ..wire.varint import Incomplete, encode_varint, read_varint


def frame(payload: bytes) -> bytes:
    """One frame: varint length + payload."""
    return encode_varint(len(payload)) + payload


def _length(buf: bytearray, pos: int) -> tuple[int, int]:
    """The frame length at `pos` and where its payload starts. The wire's read_varint takes bytes (compiled, it
    refuses a bytearray), so a longer length is read from a copy of its at most 10 bytes; a one-byte length,
    every 64-byte frame's, is read in place, so the baselines cost the same whether Aqueduct runs compiled."""
    head = buf[pos]
    if head < 0x80:
        return head, pos + 1
    length, size = read_varint(bytes(buf[pos : pos + 10]), 0)
    return length, pos + size


class Deframer:
    """Incremental frame parser over a byte stream."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """Append `data`; return every payload now complete, in order."""
        buf = self._buf
        buf += data
        out: list[bytes] = []
        pos, end = 0, len(buf)
        while pos < end:
            try:
                length, start = _length(buf, pos)
            except Incomplete:
                break
            stop = start + length
            if stop > end:
                break
            out.append(bytes(buf[start:stop]))
            pos = stop
        if pos:
            del buf[:pos]
        return out

    def count(self, data: bytes) -> tuple[int, int]:
        """Like `feed`, but only (frames, payload bytes) completed (no payload copies)."""
        buf = self._buf
        buf += data
        n = nbytes = 0
        pos, end = 0, len(buf)
        while pos < end:
            try:
                length, start = _length(buf, pos)
            except Incomplete:
                break
            stop = start + length
            if stop > end:
                break
            n += 1
            nbytes += length
            pos = stop
        if pos:
            del buf[:pos]
        return n, nbytes

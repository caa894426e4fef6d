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
                length, start = read_varint(buf, pos)  # type: ignore[arg-type]
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
                length, start = read_varint(buf, pos)  # type: ignore[arg-type]
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

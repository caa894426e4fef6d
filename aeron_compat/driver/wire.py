# Messages between clients and the standalone driver, over a Unix domain stream socket.  Each
# message is a 4-byte little-endian length (of what follows), one kind byte and a body:
#   'J'  a JSON object: commands (addpub, addsub, pos, ...) and events (reply, image, st, eos, lost)
#   'F'  frames: an 8-byte id (the client's log id, or the driver's image id) then a batch as
#        encoded by media/batch.py (positions implied, 5 bytes of overhead per frame)
# MessageReader reassembles messages from arbitrary chunks and raises WireError (never anything
# else) on a length over the limit, an unknown kind or a body that does not parse.
"""Framing of the client <-> standalone driver socket."""

from __future__ import annotations

import json
import struct
from typing import Any

from ..client.codes import AeronError
from ..client.logbuffer import Frame
from ..media.batch import encode_batch

_HEAD = struct.Struct("<IB")
_ID = struct.Struct("<q")
JSON, FRAMES = ord("J"), ord("F")
MAX_MESSAGE = 1 << 28
"""Largest message accepted (a whole max-length message of a 1 GiB term fits)."""


class WireError(AeronError):
    """The peer sent bytes that are not a valid message."""


def encode_json(msg: dict[str, Any]) -> bytes:
    """One 'J' message."""
    body = json.dumps(msg, separators=(",", ":")).encode()
    return _HEAD.pack(len(body) + 1, JSON) + body


def encode_frames(ident: int, frames: list[Frame]) -> bytes:
    """One 'F' message."""
    body = _ID.pack(ident) + encode_batch(frames)
    return _HEAD.pack(len(body) + 1, FRAMES) + body


def split_frames(body: bytes) -> tuple[int, bytes]:
    """The id and batch of an 'F' body."""
    if len(body) < _ID.size:
        raise WireError("frames message without an id")
    return _ID.unpack_from(body)[0], body[_ID.size :]


class MessageReader:
    """Reassembles (kind, body) messages; `feed` returns the complete ones (JSON bodies parsed)."""

    def __init__(self, limit: int = MAX_MESSAGE) -> None:
        self.limit = limit
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, Any]]:
        """Messages completed by `data`."""
        buf = self._buf
        buf += data
        out: list[tuple[int, Any]] = []
        start = 0
        while len(buf) - start >= _HEAD.size:
            length, kind = _HEAD.unpack_from(buf, start)
            if length < 1 or length > self.limit:
                raise WireError(f"message length {length} outside [1, {self.limit}]")
            end = start + 4 + length
            if len(buf) < end:
                break
            body = bytes(buf[start + _HEAD.size : end])
            start = end
            if kind == FRAMES:
                out.append((kind, body))
            elif kind == JSON:
                try:
                    msg = json.loads(body)
                except ValueError as exc:
                    raise WireError(f"bad JSON message: {exc}") from None
                if not isinstance(msg, dict):
                    raise WireError("JSON message is not an object")
                out.append((kind, msg))
            else:
                raise WireError(f"unknown message kind {kind}")
        del buf[:start]
        return out

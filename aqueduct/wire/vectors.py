"""Frames to and from the JSON schema of specs/vectors/aqueduct-wire.json.

A frame is an object with `type` (the dataclass name) and its fields:
channel IDs, numbers, counts and ranges as JSON ints, headers as
`[key, value-hex]` pairs, payloads as hex. `decode_kind` gives the fields a
valid vector of each kind (`varint`, `channel_id`, `frames`) holds, from its
bytes. Malformed JSON shapes raise ValueError; malformed bytes ProtocolError.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from .channel_id import ChannelId
from .frames import (
    AckNackUnreliable,
    AckReliable,
    ChannelControl,
    ClosedChannelLost,
    CloseReceiver,
    ConnectionControl,
    FinishSender,
    Frame,
    Message,
    SentUnreliable,
    Version,
)
from .headers import Headers, normalize_headers
from .reader import DEFAULT_MAX_FRAME_SIZE, decode_frames
from .varint import MAX_VARINT, decode_varint

FRAME_CLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        Version,
        ConnectionControl,
        ChannelControl,
        Message,
        SentUnreliable,
        AckReliable,
        AckNackUnreliable,
        FinishSender,
        CloseReceiver,
        ClosedChannelLost,
    )
}


def _headers_to_json(headers: Headers) -> list[list[str]]:
    return [[key, value.hex()] for key, value in headers]


def _int_from_json(value: object, what: str) -> int:
    if type(value) is not int or not 0 <= value <= MAX_VARINT:
        raise ValueError(f"{what} must be an int from 0 to 2^64-1, not {value!r}")
    return value


def _ints_from_json(value: object, what: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list of ints, not {value!r}")
    return tuple(_int_from_json(v, what) for v in value)


def _hex_from_json(value: object, what: str) -> bytes:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a hex string, not {value!r}")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise ValueError(f"{what} is not valid hex: {value!r}") from None


def _headers_from_json(value: object, what: str) -> Headers:
    if not isinstance(value, list) or not all(
        isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) for pair in value
    ):
        raise ValueError(f"{what} must be a list of [key, value-hex] pairs, not {value!r}")
    return normalize_headers((key, _hex_from_json(hexval, f"{what} value")) for key, hexval in value)


def _version_from_json(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.isascii():
        raise ValueError(f"{what} must be an ASCII string, not {value!r}")
    return value


# How each JSON field type is read: by the dataclass field name.
_FIELD_READERS: dict[str, Callable[[object, str], Any]] = {
    "version": _version_from_json,
    "headers": _headers_from_json,
    "channel": _int_from_json,
    "number": _int_from_json,
    "attachments": _ints_from_json,
    "payload": _hex_from_json,
    "count": _int_from_json,
    "reliable_count": _int_from_json,
    "ranges": _ints_from_json,
}


def frame_to_json(frame: Frame) -> dict[str, Any]:
    """One frame as a vector JSON object."""
    out: dict[str, Any] = {"type": type(frame).__name__}
    for f in dataclasses.fields(frame):
        value = getattr(frame, f.name)
        if f.name == "headers":
            value = _headers_to_json(value)
        elif isinstance(value, bytes):
            value = value.hex()
        elif isinstance(value, tuple):
            value = [int(v) for v in value]
        elif isinstance(value, int):
            value = int(value)
        out[f.name] = value
    return out


def frame_from_json(obj: object) -> Frame:
    """One vector JSON object as a frame (ValueError if it is not one)."""
    if not isinstance(obj, dict):
        raise ValueError(f"a frame must be a JSON object, not {obj!r}")
    kind = obj.get("type")
    cls = FRAME_CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown frame type {kind!r}")
    names = [f.name for f in dataclasses.fields(cls)]
    extra = set(obj) - {"type", *names}
    if extra:
        raise ValueError(f"{kind} has unknown fields {sorted(extra)}")
    missing = [n for n in names if n not in obj]
    if missing:
        raise ValueError(f"{kind} lacks fields {missing}")
    frame: Frame = cls(**{n: _FIELD_READERS[n](obj[n], f"{kind}.{n}") for n in names})
    return frame


def frames_to_json(frames: Sequence[Frame]) -> list[dict[str, Any]]:
    """Frames as a list of vector JSON objects."""
    return [frame_to_json(f) for f in frames]


def frames_from_json(obj: object) -> list[Frame]:
    """Frames from `{"frames": [...]}` or a bare list of frame objects (ValueError if malformed)."""
    if isinstance(obj, dict) and set(obj) == {"frames"}:
        obj = obj["frames"]
    if not isinstance(obj, list) or not obj:
        raise ValueError('expected {"frames": [...]} or a non-empty list of frames')
    return [frame_from_json(f) for f in obj]


def channel_id_to_json(value: int) -> dict[str, Any]:
    """A channel ID's fields as in `channel_id` vectors."""
    cid = ChannelId(value)
    return {
        "value": str(int(cid)),
        "direction": cid.direction,
        "minted_by": cid.minted_by.name.lower(),
        "oneshot": cid.oneshot,
        "index": str(cid.index),
    }


def decode_kind(kind: str, data: bytes, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> dict[str, Any]:
    """Decode `data` as a vector of `kind`; return the fields a valid vector of that kind holds."""
    if kind == "varint":
        return {"value": str(decode_varint(data))}
    if kind == "channel_id":
        return channel_id_to_json(decode_varint(data))
    if kind == "frames":
        return {"frames": frames_to_json(decode_frames(data, max_frame_size))}
    raise ValueError(f"unknown vector kind {kind!r}")


VECTOR_KINDS = ("frames", "varint", "channel_id")

"""JSON form of Aeron frames, for the captured wire vectors in specs/vectors/aeron-wire.json.

Theory: a frame becomes {"type": <class name>, <field>: <value>...} with bytes
as hex and RES entries as nested objects; `frame_from_json` inverts it, so a
test can check that decoding the captured hex gives exactly the recorded fields.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aeron_compat.native import frames as f

TYPES: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (f.DataFrame, f.Heartbeat, f.PadFrame, f.Nak, f.StatusMessage, f.ErrorFrame, f.Setup, f.Rttm,
                f.Resolution, f.ResponseSetup, f.UnknownFrame)
}


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, f.ResEntry):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    return value


def frame_to_json(frame: f.Frame) -> dict[str, Any]:
    """The JSON object of one frame."""
    out: dict[str, Any] = {"type": type(frame).__name__}
    for fld in dataclasses.fields(frame):
        out[fld.name] = _plain(getattr(frame, fld.name))
    return out


def frame_from_json(obj: dict[str, Any]) -> f.Frame:
    """The frame a JSON object describes (inverse of `frame_to_json`)."""
    cls = TYPES[obj["type"]]
    kwargs: dict[str, Any] = {}
    for fld in dataclasses.fields(cls):
        value = obj[fld.name]
        if fld.name in ("payload", "message", "body", "address", "name"):
            value = bytes.fromhex(value)
        elif fld.name == "entries":
            value = tuple(f.ResEntry(**{**e, "address": bytes.fromhex(e["address"]), "name": bytes.fromhex(e["name"])})
                          for e in value)
        kwargs[fld.name] = value
    frame: f.Frame = cls(**kwargs)
    return frame

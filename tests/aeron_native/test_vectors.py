"""Every datagram captured from real Aeron drivers decodes to its recorded fields and re-encodes to its bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aeron_compat.native.codec import decode_datagram, encode_datagram
from aeron_compat.native.vectors import frame_from_json, frame_to_json

VECTORS = json.loads((Path(__file__).parents[2] / "specs" / "vectors" / "aeron-wire.json").read_text())["vectors"]


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: f"{v['frames'][0]['type']}-{len(v['hex']) // 2}")
def test_captured_datagram_decodes_to_recorded_fields(vector: dict[str, Any]) -> None:
    wire = bytes.fromhex(vector["hex"])
    frames = decode_datagram(wire)
    assert [frame_to_json(f) for f in frames] == vector["frames"]
    assert frames == [frame_from_json(f) for f in vector["frames"]]
    ours = encode_datagram(frames)
    assert wire.startswith(ours) and not wire[len(ours):].strip(b"\0")  # real senders also pad the last frame


def test_capture_covers_the_frames_real_drivers_send() -> None:
    seen = {(f["type"], f.get("flags")) for v in VECTORS for f in v["frames"]}
    for expected in [("Setup", 0), ("StatusMessage", 0), ("StatusMessage", 0x80), ("StatusMessage", 0x40),
                     ("Heartbeat", 0xC0), ("Heartbeat", 0xE0), ("DataFrame", 0xC0), ("DataFrame", 0x80),
                     ("DataFrame", 0x40), ("DataFrame", 0), ("PadFrame", 0xC0), ("Nak", 0), ("Rttm", 0x80),
                     ("Rttm", 0)]:
        assert expected in seen
    sm_lengths = {len(bytes.fromhex(v["hex"])) for v in VECTORS if v["frames"][0]["type"] == "StatusMessage"}
    assert sm_lengths == {44}  # receiver id and group tag (gtag=7): the seed's 28 bytes never appear

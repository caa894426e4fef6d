"""Stream packets: golden vectors per kind and profile, hypothesis round trips, typed rejection of bad bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeron_compat.marlin.packets import (
    PROFILES,
    Ack,
    Conf,
    Data,
    Dial,
    DialConf,
    Packet,
    Profile,
    Rst,
    StreamWireError,
    decode,
    encode,
)
from aqueduct.errors import AqueductError

DOC = json.loads((Path(__file__).parents[2] / "specs" / "vectors" / "stream-wire.json").read_text())
TYPES: dict[str, Any] = {"Data": Data, "Ack": Ack, "Dial": Dial, "DialConf": DialConf, "Conf": Conf, "Rst": Rst}


def from_json(obj: dict[str, Any]) -> Packet:
    kw = {k: v for k, v in obj.items() if k != "type"}
    for key in ("data", "payload", "trailer"):
        if key in kw:
            kw[key] = bytes.fromhex(kw[key])
    if "entries" in kw:
        kw["entries"] = tuple(kw["entries"])
    packet: Packet = TYPES[obj["type"]](**kw)
    return packet


@pytest.mark.parametrize("vector", DOC["vectors"], ids=lambda v: f"{v['profile']}-{v['packet']['type']}")
def test_golden_vector_decodes_to_its_fields_and_encodes_to_its_bytes(vector: dict[str, Any]) -> None:
    wire = bytes.fromhex(vector["hex"])
    packet = from_json(vector["packet"])
    assert decode(wire, vector["profile"]) == packet
    assert encode(packet, vector["profile"]) == wire
    if "acked" in vector:
        assert isinstance(packet, Ack)
        assert [list(r) for r in packet.acked()] == vector["acked"]


def test_vectors_cover_every_kind_in_both_profiles() -> None:
    seen = {(v["profile"], v["packet"]["type"], v["packet"].get("fin")) for v in DOC["vectors"]}
    for p in PROFILES:
        for kind in [("Data", False), ("Data", True), ("Ack", None), ("Dial", None), ("DialConf", None),
                     ("Conf", None), ("Rst", None)]:
            assert (p, *kind) in seen


@pytest.mark.parametrize("bad", DOC["malformed"], ids=lambda b: f"{b['profile']}-{b['why']}")
def test_malformed_datagram_is_rejected_with_a_typed_error(bad: dict[str, str]) -> None:
    with pytest.raises(StreamWireError) as info:
        decode(bytes.fromhex(bad["hex"]), bad["profile"])  # type: ignore[arg-type]
    assert isinstance(info.value, AqueductError)


u32 = st.integers(0, (1 << 32) - 1)
u64 = st.integers(0, (1 << 63))


@st.composite
def acks(draw: st.DrawFn) -> Ack:
    largest = draw(u64)
    entries: list[int] = []
    room = largest + 1
    for _ in range(draw(st.integers(0, 9))):
        if room < 1:
            break
        e = draw(st.integers(1, min(room, 1 << 20)))
        entries.append(e)
        room -= e
    return Ack(draw(u32), draw(u32), largest, tuple(entries))


def packets(profile: Profile) -> st.SearchStrategy[Packet]:
    payload = st.binary(max_size=40) if profile == "openweaver" else st.just(b"")
    trailer = st.binary(min_size=28, max_size=28) if profile == "openweaver" else st.just(b"")
    return st.one_of(
        st.builds(Data, u32, u32, st.integers(0, 0xFFFF), u64, st.integers(0, 1 << 62), st.binary(max_size=1400),
                  st.booleans(), trailer),
        acks(),
        st.builds(Dial, u32, st.just(0) if profile == "seed" else u32, payload),
        st.builds(DialConf, u32, u32, payload),
        st.builds(Conf, u32, u32),
        st.builds(Rst, u32, u32),
    )


@pytest.mark.parametrize("profile", PROFILES)
@given(data=st.data())
def test_every_packet_round_trips(profile: Profile, data: st.DataObject) -> None:
    packet = data.draw(packets(profile))
    assert decode(encode(packet, profile), profile) == packet


@pytest.mark.parametrize("profile", PROFILES)
@given(blob=st.binary(max_size=200))
def test_arbitrary_bytes_decode_or_raise_only_the_wire_error(profile: Profile, blob: bytes) -> None:
    try:
        packet = decode(blob, profile)
    except StreamWireError:
        return
    assert encode(packet, profile) == blob


def test_profiles_differ_in_byte_order_and_data_layout() -> None:
    p = Data(1, 2, 3, 4, 5, b"x")
    seed, ow = encode(p, "seed"), encode(p, "openweaver")
    assert seed[2:6] == b"\0\0\0\1" and ow[2:6] == b"\1\0\0\0"
    assert seed[10:12] == b"\0\3" and ow[10:18] == (4).to_bytes(8, "little")
    assert len(ow) == len(seed) + 28 and ow.endswith(bytes(28))  # the unencrypted AEAD trailer


def test_unknown_profile_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        encode(Conf(1, 2), "quic")  # type: ignore[arg-type]

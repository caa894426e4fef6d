"""Codecs: CBOR finds halves anywhere in a payload; raw carries bytes plus an attachment list."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aqueduct import CodecError
from aqueduct.api import CborCodec, RawCodec, RawMessage, channel
from aqueduct.api.codec import ATTACHMENT_TAG

cbor_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | st.binary() | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


def test_cbor_finds_halves_at_any_depth_in_order() -> None:
    tx1, _rx1 = channel()
    _tx2, rx2 = channel()
    codec = CborCodec()
    obj = {"a": [1, {"deep": [tx1]}], "b": (rx2, "x")}
    payload, halves = codec.encode(obj)
    assert halves == [tx1, rx2]
    back = codec.decode(payload, ["H0", "H1"])  # type: ignore[list-item]
    assert back == {"a": [1, {"deep": ["H0"]}], "b": ["H1", "x"]}


@given(cbor_values)
def test_cbor_round_trips_plain_values(value: object) -> None:
    codec = CborCodec()
    payload, halves = codec.encode(value)
    assert halves == []
    assert codec.decode(payload, []) == value


@given(st.binary(max_size=64))
def test_cbor_rejects_garbage_with_a_typed_error(data: bytes) -> None:
    try:
        CborCodec().decode(data, [])
    except CodecError:
        pass


def test_cbor_bad_attachment_index_and_unencodable() -> None:
    import cbor2

    with pytest.raises(CodecError, match="out of range"):
        CborCodec().decode(cbor2.dumps(cbor2.CBORTag(ATTACHMENT_TAG, 3)), [])
    with pytest.raises(CodecError):
        CborCodec().encode(object())
    tx, _rx = channel()
    with pytest.raises(CodecError, match="twice"):
        CborCodec().encode([tx, tx])


def test_codec_names() -> None:
    import re

    assert re.fullmatch(r"cbor-[0-9a-f]{6}", CborCodec.name)
    assert RawCodec.name == "raw"


def test_raw_codec() -> None:
    tx, rx = channel()
    codec = RawCodec()
    assert codec.encode(b"abc") == (b"abc", [])
    assert codec.encode(RawMessage(b"q", [tx, rx])) == (b"q", [tx, rx])
    assert codec.decode(b"q", [tx]) == RawMessage(b"q", [tx])
    with pytest.raises(CodecError):
        codec.encode({"not": "bytes"})

"""A peer's header data is read under HeaderLimits (issue 26 item 4): headers within the caps decode as before;
past any cap (total bytes, count, key size, value size) the read fails with LIMIT_EXCEEDED, never another error;
the total is refused from its declared length alone, before the header bytes arrive or are held."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wire_strategies import headers as header_lists

from aqueduct.core.config import EngineConfig
from aqueduct.wire import (
    CloseCode,
    ConnectionControl,
    FrameReader,
    ProtocolError,
    Version,
    decode_frames,
    encode_frame,
    encode_frames,
    encode_varint,
)
from aqueduct.wire.headers import DEFAULT_HEADER_LIMITS, HeaderLimits, encode_headers, read_headers

SMALL = HeaderLimits(total_bytes=400, count=6, name_bytes=8, value_bytes=100)

small_headers = st.lists(st.tuples(st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1,
                                           max_size=10), st.binary(max_size=120)), max_size=9).map(tuple)


@given(small_headers)
def test_headers_within_the_caps_decode_and_any_past_them_are_limit_exceeded(hs: tuple[tuple[str, bytes], ...]) -> None:
    data = encode_headers(hs)
    inner = len(data) - len(encode_varint(len(data) - 1)) if data else 0
    past = inner > SMALL.total_bytes or len(hs) > SMALL.count or any(
        len(k) > SMALL.name_bytes or len(v) > SMALL.value_bytes for k, v in hs)
    if not past:
        assert read_headers(data, 0, SMALL) == (hs, len(data))
        assert FrameReader(headers=SMALL).feed(b"\x01" + data) == [ConnectionControl(hs)]
        return
    with pytest.raises(ProtocolError) as err:
        read_headers(data, 0, SMALL)
    assert err.value.code is CloseCode.LIMIT_EXCEEDED
    with pytest.raises(ProtocolError) as err:
        decode_frames(b"\x01" + data, headers=SMALL)
    assert err.value.code is CloseCode.LIMIT_EXCEEDED


@given(header_lists)
def test_the_default_caps_take_every_ordinary_header_list(hs: tuple[tuple[str, bytes], ...]) -> None:
    assert decode_frames(b"\x01" + encode_headers(hs)) == [ConnectionControl(hs)]


@pytest.mark.parametrize("declared", [DEFAULT_HEADER_LIMITS.total_bytes + 1, 15_000_000, 1 << 40])
def test_a_large_declared_total_is_refused_before_its_bytes_arrive(declared: int) -> None:
    """The length arrives first: refused with 12 bytes in hand, nothing of the header data held."""
    reader = FrameReader()
    head = encode_frame(Version()) + b"\x01" + encode_varint(declared)
    with pytest.raises(ProtocolError, match="max_header_bytes") as err:
        reader.feed(head + b"\x01k\x00")
    assert err.value.code is CloseCode.LIMIT_EXCEEDED


def test_count_key_and_value_caps_name_their_setting() -> None:
    cases = {
        "max_headers": (("k", b""),) * (SMALL.count + 1),
        "max_header_name_bytes": (("k" * (SMALL.name_bytes + 1), b""),),
        "max_header_value_bytes": (("k", b"v" * (SMALL.value_bytes + 1)),),
    }
    for setting, hs in cases.items():
        with pytest.raises(ProtocolError, match=setting) as err:
            decode_frames(encode_frames([ConnectionControl(hs)]), headers=SMALL)
        assert err.value.code is CloseCode.LIMIT_EXCEEDED


def test_many_empty_headers_stop_at_the_count_cap() -> None:
    """The issue's shape (empty headers by the million) within the total: refused at header max_headers + 1."""
    data = b"\x01" + encode_headers((("k", b""),) * 80_000)
    with pytest.raises(ProtocolError, match=f"more than {DEFAULT_HEADER_LIMITS.count} headers"):
        decode_frames(data)


def test_a_frame_limit_below_the_header_total_still_bounds_the_header_data() -> None:
    with pytest.raises(ProtocolError, match="limit of 100"):
        decode_frames(encode_frame(ConnectionControl((("k", b"v" * 200),))), max_frame_size=100)


def test_engine_config_carries_the_caps() -> None:
    config = EngineConfig(max_header_bytes=1, max_headers=2, max_header_name_bytes=3, max_header_value_bytes=4)
    assert config.header_limits == HeaderLimits(1, 2, 3, 4)
    assert EngineConfig().header_limits == DEFAULT_HEADER_LIMITS

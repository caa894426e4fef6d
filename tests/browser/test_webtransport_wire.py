"""WebTransport's numbers and capsules (quic/webtransport_wire.py): error codes both ways, the close capsule, bounds."""

from __future__ import annotations

import pytest
from aioquic.buffer import encode_uint_var
from hypothesis import given
from hypothesis import strategies as st

from aqueduct.quic.webtransport_wire import (
    CLOSE_WEBTRANSPORT_SESSION,
    MAX_CAPSULE,
    MAX_CLOSE_REASON,
    CapsuleReader,
    WebTransportError,
    app_code,
    close_capsule,
    http_code,
    parse_close,
)


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_an_application_code_survives_the_http3_mapping(code: int) -> None:
    assert app_code(http_code(code)) == code


@given(st.integers(min_value=0, max_value=2**62 - 1))
def test_any_http3_code_maps_back_to_an_application_code_or_none(http: int) -> None:
    code = app_code(http)
    assert code is None or http_code(code) == http


def test_grease_and_plain_http3_codes_carry_no_application_code() -> None:
    assert app_code(0x100) is None  # H3_NO_ERROR
    assert app_code(http_code(0x1D) + 1) is None  # the GREASE value between 0x1d and 0x1e


@given(st.integers(min_value=0, max_value=2**32 - 1), st.text(max_size=2000),
       st.lists(st.integers(min_value=1, max_value=50), max_size=8))
def test_a_close_capsule_reads_back_in_any_split(code: int, reason: str, cuts: list[int]) -> None:
    data = close_capsule(code, reason)
    reader, got, pos = CapsuleReader(), [], 0
    for cut in cuts:
        got += reader.feed(data[pos:pos + cut])
        pos += cut
    got += reader.feed(data[pos:])
    assert len(got) == 1 and got[0][0] == CLOSE_WEBTRANSPORT_SESSION
    back_code, back_reason = parse_close(got[0][1])
    assert back_code == code and reason.startswith(back_reason) and len(back_reason.encode()) <= MAX_CLOSE_REASON
    assert not reader.pending


def test_an_oversized_capsule_is_refused_before_it_is_held() -> None:
    with pytest.raises(WebTransportError):
        CapsuleReader().feed(encode_uint_var(0x21) + encode_uint_var(MAX_CAPSULE + 1))


@pytest.mark.parametrize("value", [b"\x00\x00", b"\x00\x00\x00\x00\xff", b"\x00" * (5 + MAX_CLOSE_REASON)],
                         ids=["short", "not-utf8", "long-reason"])
def test_a_malformed_close_capsule_is_a_typed_error(value: bytes) -> None:
    with pytest.raises(WebTransportError):
        parse_close(value)

"""Channel URI parsing, validation (errors name the parameter) and the builder."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeron_compat import ChannelUri, ChannelUriStringBuilder, InvalidChannelError
from aeron_compat.client.uri import parse_size


def test_parse_udp_with_parameters() -> None:
    uri = ChannelUri.parse("aeron:udp?endpoint=localhost:40123|control=10.0.0.1:40124|control-mode=dynamic"
                           "|reliable=false|mtu=1216|term-length=64k|session-id=-7|linger=5s|ttl=8|alias=x|tags=1,2")
    assert uri.media == "udp" and uri.is_udp()
    assert uri.get("endpoint") == "localhost:40123"
    assert uri.get("term-length") == "64k"
    assert uri.get("session-id") == "-7"


def test_ipc_round_trips_through_str() -> None:
    text = "aeron:ipc?term-length=128k|mtu=4096"
    assert str(ChannelUri.parse(text)) == text
    assert str(ChannelUri.parse("aeron:ipc")) == "aeron:ipc"


@pytest.mark.parametrize(
    ("uri", "named"),
    [
        ("udp?endpoint=a:1", "scheme"),
        ("aeron:tcp?endpoint=a:1", "media"),
        ("aeron:udp?endpoint=nope", "endpoint"),
        ("aeron:udp?endpoint=a:70000", "endpoint"),
        ("aeron:udp?control=a", "control"),
        ("aeron:udp?control-mode=sometimes|control=a:1", "control-mode"),
        ("aeron:udp?endpoint=a:1|reliable=yes", "reliable"),
        ("aeron:udp?endpoint=a:1|mtu=1000", "mtu"),
        ("aeron:udp?endpoint=a:1|mtu=32", "mtu"),
        ("aeron:udp?endpoint=a:1|term-length=100000", "term-length"),
        ("aeron:udp?endpoint=a:1|term-length=32k", "term-length"),
        ("aeron:udp?endpoint=a:1|term-length=2g", "term-length"),
        ("aeron:udp?endpoint=a:1|session-id=abc", "session-id"),
        ("aeron:udp?endpoint=a:1|session-id=4294967296", "session-id"),
        ("aeron:udp?endpoint=a:1|linger=soon", "linger"),
        ("aeron:udp?endpoint=a:1|ttl=300", "ttl"),
        ("aeron:udp?endpoint=a:1|alias=", "alias"),
        ("aeron:udp?endpoint=a:1|tags=a,,b", "tags"),
        ("aeron:udp?endpoint=a:1|colour=blue", "colour"),
        ("aeron:udp?endpoint=a:1|endpoint=a:2", "endpoint"),
        ("aeron:udp?endpoint", "endpoint"),
        ("aeron:ipc?endpoint=a:1", "endpoint"),
        ("aeron:udp?control-mode=dynamic", "control"),
        ("aeron:udp?endpoint=a:1|term-id=5", "init-term-id"),
    ],
)
def test_invalid_uris_name_the_parameter(uri: str, named: str) -> None:
    with pytest.raises(InvalidChannelError) as info:
        ChannelUri.parse(uri)
    assert str(info.value).startswith(named + ":")


def test_ignored_aeron_parameters_are_accepted() -> None:
    assert ChannelUri.parse("aeron:udp?endpoint=a:1|sparse=true|so-rcvbuf=1m").get("sparse") == "true"


def test_builder_builds_the_guides_channels() -> None:
    built = (ChannelUriStringBuilder().media("udp").reliable(True).endpoint("10.0.0.1:9000")
             .control("10.0.0.1:9001").control_mode("dynamic").session_id(42).build())
    assert built == ("aeron:udp?reliable=true|endpoint=10.0.0.1:9000|control=10.0.0.1:9001"
                     "|control-mode=dynamic|session-id=42")
    assert ChannelUriStringBuilder().media("ipc").term_length(65536).build() == "aeron:ipc?term-length=65536"


def test_builder_validates() -> None:
    with pytest.raises(InvalidChannelError, match=r"^mtu:"):
        ChannelUriStringBuilder().endpoint("a:1").mtu(100).build()


def test_put_validates() -> None:
    uri = ChannelUri.parse("aeron:udp?endpoint=a:1")
    with pytest.raises(InvalidChannelError, match=r"^ttl:"):
        uri.put("ttl", "-1")


@given(st.integers(min_value=0, max_value=2**20), st.sampled_from(["", "k", "m", "g", "K", "M", "G"]))
def test_size_suffixes(n: int, suffix: str) -> None:
    scale = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[suffix.lower()]
    assert parse_size(f"{n}{suffix}", "x") == n * scale


@given(st.text(max_size=40))
def test_parse_never_raises_anything_but_invalid_channel(text: str) -> None:
    try:
        ChannelUri.parse("aeron:udp?" + text)
    except InvalidChannelError:
        pass

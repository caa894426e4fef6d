# Channel URIs: `aeron:<media>?key=value|key=value`.  Parsing splits, then every known parameter
# goes through one validator from the table below, so an error always names the parameter.
# Parameters Aeron has but this package does not act on are accepted (ported code keeps working)
# and listed in IGNORED; anything else is rejected as a likely typo.
"""`ChannelUri` parsing/validation and the `ChannelUriStringBuilder`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .codes import AeronError

MEDIA = ("udp", "ipc")
CONTROL_MODES = ("manual", "dynamic", "response")
TRANSPORTS = ("native", "stream")
"""`transport=` of aeron:udp: Aeron's own UDP wire (native/), or Marlin Stream (media/stream.py); without
it, the driver's `udp_media` (Aqueduct over QUIC, or the in-process loopback)."""
_MIN_TERM, _MAX_TERM = 64 * 1024, 1024 * 1024 * 1024
_SIZE = re.compile(r"^(\d+)([kKmMgG]?)$")
_DURATION = re.compile(r"^(\d+)(ns|us|ms|s)?$")
_HOSTPORT = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.\-]+):(\d{1,5})$")


class InvalidChannelError(AeronError, ValueError):
    """A channel URI is malformed; the message names the offending parameter."""


def parse_size(value: str, name: str) -> int:
    """`64k`, `1m`, `1g` or plain bytes."""
    m = _SIZE.match(value)
    if not m:
        raise InvalidChannelError(f"{name}: not a size: {value!r}")
    scale = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[m.group(2).lower()]
    return int(m.group(1)) * scale


def parse_duration_ns(value: str, name: str) -> int:
    """A duration in nanoseconds: plain numbers are nanoseconds, as in Aeron; ns/us/ms/s suffixes."""
    m = _DURATION.match(value)
    if not m:
        raise InvalidChannelError(f"{name}: not a duration: {value!r}")
    scale = {None: 1, "ns": 1, "us": 1000, "ms": 1000_000, "s": 1000_000_000}[m.group(2)]
    return int(m.group(1)) * scale


def parse_endpoint(value: str, name: str) -> tuple[str, int]:
    """`host:port` (IPv6 hosts in brackets); port 0 asks for an ephemeral port."""
    m = _HOSTPORT.match(value)
    if not m or int(m.group(2)) > 65535:
        raise InvalidChannelError(f"{name}: expected host:port, got {value!r}")
    return m.group(1).strip("[]"), int(m.group(2))


def _int_range(lo: int, hi: int) -> Callable[[str, str], None]:
    def check(value: str, name: str) -> None:
        try:
            n = int(value)
        except ValueError:
            raise InvalidChannelError(f"{name}: not an integer: {value!r}") from None
        if not lo <= n <= hi:
            raise InvalidChannelError(f"{name}: {n} outside [{lo}, {hi}]")

    return check


def _choice(options: tuple[str, ...]) -> Callable[[str, str], None]:
    def check(value: str, name: str) -> None:
        if value not in options:
            raise InvalidChannelError(f"{name}: {value!r} is not one of {', '.join(options)}")

    return check


def _check_mtu(value: str, name: str) -> None:
    n = parse_size(value, name)
    if n % 32 or not 64 <= n <= 65504:
        raise InvalidChannelError(f"{name}: {n} must be a multiple of 32 in [64, 65504]")


def _check_term_length(value: str, name: str) -> None:
    n = parse_size(value, name)
    if n & (n - 1) or not _MIN_TERM <= n <= _MAX_TERM:
        raise InvalidChannelError(f"{name}: {n} must be a power of two in [64k, 1g]")


def _check_endpoint(value: str, name: str) -> None:
    parse_endpoint(value, name)


def _check_duration(value: str, name: str) -> None:
    parse_duration_ns(value, name)


def _check_tags(value: str, name: str) -> None:
    if not all(t.strip() for t in value.split(",")):
        raise InvalidChannelError(f"{name}: empty tag in {value!r}")


def _any(value: str, name: str) -> None:
    if not value:
        raise InvalidChannelError(f"{name}: empty value")


_INT32 = _int_range(-(2**31), 2**31 - 1)
VALIDATORS: dict[str, Callable[[str, str], None]] = {
    "endpoint": _check_endpoint,
    "control": _check_endpoint,
    "control-mode": _choice(CONTROL_MODES),
    "reliable": _choice(("true", "false")),
    "mtu": _check_mtu,
    "term-length": _check_term_length,
    "session-id": _INT32,
    "linger": _check_duration,
    "ttl": _int_range(0, 255),
    "alias": _any,
    "tags": _check_tags,
    "init-term-id": _INT32,
    "term-id": _INT32,
    "term-offset": _int_range(0, _MAX_TERM),
    "response-correlation-id": _int_range(0, 2**63 - 1),
    "transport": _choice(TRANSPORTS),
}
IGNORED = frozenset(
    "interface sparse eos tether group rejoin so-sndbuf so-rcvbuf rcv-wnd fc cc gtag nak-delay "
    "untethered-window-limit-timeout untethered-resting-timeout ssc spies-simulate-connection "
    "max-resend stream-id channel-rcv-ts-offset channel-snd-ts-offset media-rcv-ts-offset".split()
)


@dataclass
class ChannelUri:
    """A parsed channel: media (`udp` or `ipc`) and validated parameters (all strings, as written)."""

    media: str
    params: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, uri: str) -> ChannelUri:
        """Parse and validate `aeron:udp?...` / `aeron:ipc[?...]`."""
        if not uri.startswith("aeron:"):
            raise InvalidChannelError(f"scheme: channel must start with 'aeron:', got {uri!r}")
        media, _, query = uri[len("aeron:") :].partition("?")
        if media not in MEDIA:
            raise InvalidChannelError(f"media: {media!r} is not one of {', '.join(MEDIA)}")
        params: dict[str, str] = {}
        for item in query.split("|") if query else []:
            key, eq, value = item.partition("=")
            if not eq:
                raise InvalidChannelError(f"{key or 'parameter'}: expected key=value, got {item!r}")
            if key in params:
                raise InvalidChannelError(f"{key}: given twice")
            params[key] = value
        channel = cls(media, params)
        channel.validate()
        return channel

    def validate(self) -> None:
        """Check every parameter and the combinations Aeron requires."""
        for key, value in self.params.items():
            check = VALIDATORS.get(key)
            if check is not None:
                check(value, key)
            elif key not in IGNORED:
                raise InvalidChannelError(f"{key}: unknown channel parameter")
        mode = self.params.get("control-mode")
        if self.media == "ipc":
            for key in ("endpoint", "control", "control-mode", "transport"):
                if key in self.params:
                    raise InvalidChannelError(f"{key}: not valid for aeron:ipc")
        elif mode == "dynamic" and "control" not in self.params:
            raise InvalidChannelError("control: control-mode=dynamic needs a control endpoint")
        if "term-id" in self.params and "init-term-id" not in self.params:
            raise InvalidChannelError("init-term-id: needed with term-id")

    def get(self, key: str, default: str | None = None) -> str | None:
        """A parameter's raw value."""
        return self.params.get(key, default)

    def put(self, key: str, value: str) -> None:
        """Set a parameter (validated)."""
        check = VALIDATORS.get(key)
        if check is not None:
            check(value, key)
        self.params[key] = value

    def is_udp(self) -> bool:
        """Media is udp."""
        return self.media == "udp"

    def is_ipc(self) -> bool:
        """Media is ipc."""
        return self.media == "ipc"

    def __str__(self) -> str:
        query = "|".join(f"{k}={v}" for k, v in self.params.items())
        return f"aeron:{self.media}" + (f"?{query}" if query else "")


class ChannelUriStringBuilder:
    """Fluent builder of channel strings: `ChannelUriStringBuilder().media("udp").endpoint("h:1").build()`."""

    def __init__(self) -> None:
        self._media = "udp"
        self._params: dict[str, str] = {}

    def media(self, media: str) -> ChannelUriStringBuilder:
        """`udp` or `ipc`."""
        self._media = media
        return self

    def _set(self, key: str, value: object) -> ChannelUriStringBuilder:
        if value is None:
            self._params.pop(key, None)
        else:
            text = str(value).lower() if isinstance(value, bool) else str(value)
            self._params[key] = text
        return self

    def endpoint(self, v: str | None) -> ChannelUriStringBuilder:
        """Where the subscription's driver listens / the publication sends."""
        return self._set("endpoint", v)

    def control(self, v: str | None) -> ChannelUriStringBuilder:
        """Publication control endpoint for multi-destination-cast."""
        return self._set("control", v)

    def control_mode(self, v: str | None) -> ChannelUriStringBuilder:
        """`manual`, `dynamic` or `response`."""
        return self._set("control-mode", v)

    def reliable(self, v: bool | None) -> ChannelUriStringBuilder:
        """False selects Aqueduct's unreliable lane."""
        return self._set("reliable", v)

    def transport(self, v: str | None) -> ChannelUriStringBuilder:
        """`native` (Aeron's UDP wire) or `stream` (Marlin Stream); None: the driver's udp media."""
        return self._set("transport", v)

    def mtu(self, v: int | None) -> ChannelUriStringBuilder:
        """Maximum frame length (multiple of 32)."""
        return self._set("mtu", v)

    def term_length(self, v: int | None) -> ChannelUriStringBuilder:
        """Term length (power of two); the flow-control window is half of it."""
        return self._set("term-length", v)

    def session_id(self, v: int | None) -> ChannelUriStringBuilder:
        """Explicit session id (publication) or session filter (subscription)."""
        return self._set("session-id", v)

    def linger(self, v: int | None) -> ChannelUriStringBuilder:
        """Linger time in nanoseconds."""
        return self._set("linger", v)

    def ttl(self, v: int | None) -> ChannelUriStringBuilder:
        """Multicast TTL (accepted, unused)."""
        return self._set("ttl", v)

    def alias(self, v: str | None) -> ChannelUriStringBuilder:
        """Free-form name shown by `aeron_compat stat`."""
        return self._set("alias", v)

    def tags(self, v: str | None) -> ChannelUriStringBuilder:
        """Comma separated tags."""
        return self._set("tags", v)

    def response_correlation_id(self, v: int | None) -> ChannelUriStringBuilder:
        """Pairs a response channel with the image / subscription it answers."""
        return self._set("response-correlation-id", v)

    def build(self) -> str:
        """The channel string (validated)."""
        channel = ChannelUri(self._media, dict(self._params))
        channel.validate()
        return str(channel)

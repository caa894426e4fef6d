"""What the native transport takes from an `aeron:udp` channel URI.

Theory: the URI is parsed and validated by `aeron_compat.client.uri.ChannelUri` (after
taking out `transport=native`, which only selects this transport) and reduced
to the few settings the UDP state machines need: endpoint, control address and
mode, term length, MTU, session id, initial term id, linger.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from aeron_compat.client.uri import ChannelUri, parse_duration_ns, parse_endpoint, parse_size
from aeron_compat.native.publisher_config import DestinationMode

Address = tuple[str, int]
TRANSPORT_PARAM = "transport"
NATIVE = "native"


def resolve(host_port: tuple[str, int]) -> Address:
    """An IPv4 (host, port) for a host name or address (`localhost` becomes 127.0.0.1)."""
    host, port = host_port
    return socket.gethostbyname(host.strip("[]")), port


def is_native(channel: str) -> bool:
    """Whether `channel` asks for the native Aeron UDP transport."""
    _, _, query = channel.partition("?")
    return any(item == f"{TRANSPORT_PARAM}={NATIVE}" for item in query.split("|"))


@dataclass(frozen=True)
class NativeChannel:
    """Settings of one native channel; None means "not given"."""

    channel: str
    endpoint: Address | None
    control: Address | None
    mode: DestinationMode
    term_length: int | None
    mtu: int | None
    session_id: int | None
    init_term_id: int | None
    linger_ns: int | None

    @classmethod
    def parse(cls, channel: str) -> NativeChannel:
        """Parse and validate `channel` (an `aeron:udp` URI, `transport=native` optional)."""
        media, _, query = channel.partition("?")
        items = [i for i in query.split("|") if i and i.partition("=")[0] != TRANSPORT_PARAM]
        uri = ChannelUri.parse(media + ("?" + "|".join(items) if items else ""))
        if not uri.is_udp():
            raise ValueError(f"media: the native transport carries aeron:udp only, not {channel!r}")
        p = uri.params

        def addr(name: str) -> Address | None:
            return resolve(parse_endpoint(p[name], name)) if name in p else None

        control = addr("control")
        mode = DestinationMode.UNICAST
        if p.get("control-mode") == "manual":
            mode = DestinationMode.MANUAL
        elif control is not None:
            mode = DestinationMode.DYNAMIC
        return cls(
            channel=channel,
            endpoint=addr("endpoint"),
            control=control,
            mode=mode,
            term_length=parse_size(p["term-length"], "term-length") if "term-length" in p else None,
            mtu=parse_size(p["mtu"], "mtu") if "mtu" in p else None,
            session_id=int(p["session-id"]) if "session-id" in p else None,
            init_term_id=int(p["init-term-id"]) if "init-term-id" in p else None,
            linger_ns=parse_duration_ns(p["linger"], "linger") if "linger" in p else None,
        )

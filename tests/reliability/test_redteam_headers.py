"""Red team, connection headers (issue 26 items 3 and 4): hostile ConnectionControl frames against a live server.

Each attack is a raw aioquic client (hostile.RawPeer, from 127.0.0.2) whose first frames on the connection control
stream carry hostile headers, against a live server process while live.GoodClient keeps doing echo round trips
from 127.0.0.1 (test_live_hostile.run_attack: it asserts the attacker's close code, bounded memory and tables,
and that the good client was served during the attack). The server runs with the engine's default frame and
buffer sizes (16 MiB, 64 MiB), not the hostile suite's small ones, so only the header caps stand in the way:

- the issue's deep `schema` header (`[` * 100 000 + `]` * 100 000, 200 KB) against a typed server (one that
  reads the header): before, a RecursionError escaped the datagram callback and the attacker stayed connected;
- a deep schema that fits the header caps (40 KB, 20 000 deep): refused by the schema depth cap before parsing;
- many headers (1 000 000 empty ones, 3 MB; the issue sent 5 000 000): before, parsed into ~70 MB of tuples
  before `authenticate` and kept for the connection's life; and 80 000 of them within max_header_bytes;
- one huge header value (12 MB).
Run with -s for the FIGURES lines (SECURITY.md and the closing note).
"""

from __future__ import annotations

import asyncio

from aqueduct.api.codec import DEFAULT_CODEC
from aqueduct.core.config import EngineConfig
from aqueduct.quic.certs import DevCerts
from aqueduct.wire.errors import CloseCode
from aqueduct.wire.frames import ConnectionControl, Version, encode_frames

from .hostile import RawPeer
from .live import GUARD, LiveServer
from .test_live_hostile import run_attack

DEFAULT_SIZES: dict[str, object] = {
    "max_frame_size": EngineConfig().max_frame_size,
    "max_buffered_bytes": EngineConfig().max_buffered_bytes,
}
"""The engine's own frame and buffer sizes (the hostile suite's 64 KiB frames would refuse these frames anyway)."""
HEADER_BOUND = EngineConfig().max_header_bytes
CBOR = DEFAULT_CODEC.name.encode()


def hello_with(headers: tuple[tuple[str, bytes], ...]):  # type: ignore[no-untyped-def]
    """An attack: connect, then open the connection control stream with Version + these headers (encoded
    beforehand: a million headers take seconds, which the server's start-up deadline would count)."""
    data = encode_frames([Version(), ConnectionControl(headers)])

    async def attack(peer: RawPeer, _server: LiveServer) -> None:
        await asyncio.wait_for(peer.wait_connected(), GUARD)
        sid = peer.new_stream(uni=False)
        assert sid == 0
        peer.write(sid, data)

    return attack


async def check(certs: DevCerts, name: str, headers: tuple[tuple[str, bytes], ...], expected: CloseCode,
                typed: bool = False) -> None:
    watch, _ = await run_attack(certs, name, hello_with(headers), expected, DEFAULT_SIZES, hello=False, typed=typed)
    assert watch.peak_tables.get("peer_header_bytes", 0) <= 2 * HEADER_BOUND  # the good client's and ours


async def test_the_issues_deep_schema_header(certs: DevCerts) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    await check(certs, "redteam_deep_schema_200kb", (("codec", CBOR), ("schema", deep)),
                CloseCode.LIMIT_EXCEEDED, typed=True)


async def test_a_deep_schema_within_the_header_caps(certs: DevCerts) -> None:
    deep = b"[" * 20_000 + b"]" * 20_000
    await check(certs, "redteam_deep_schema_40kb", (("codec", CBOR), ("schema", deep)),
                CloseCode.SCHEMA_MISMATCH, typed=True)


async def test_many_headers(certs: DevCerts) -> None:
    await check(certs, "redteam_many_headers", (("codec", b"raw"),) + (("k", b""),) * 1_000_000,
                CloseCode.LIMIT_EXCEEDED)


async def test_many_headers_within_the_total(certs: DevCerts) -> None:
    """80 000 empty headers in 240 KB, under max_header_bytes: the count cap ends the read at header 257."""
    await check(certs, "redteam_many_headers_240kb", (("codec", b"raw"),) + (("k", b""),) * 80_000,
                CloseCode.LIMIT_EXCEEDED)


async def test_a_huge_header_value(certs: DevCerts) -> None:
    await check(certs, "redteam_huge_header_value", (("codec", b"raw"), ("x", b"v" * 12_000_000)),
                CloseCode.LIMIT_EXCEEDED)

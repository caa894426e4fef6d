"""The hostile-peer suite against a live `aqueduct serve --echo` process (issue 16 item 5).

The attacker is a raw aioquic client (hostile.RawPeer, not our engine) writing our wire codec from 127.0.0.2.
For each attack the server process runs with small limits (`--limit`), and the test asserts, from the process's
own metrics endpoint (live.Watch): resident memory grew by less than `RSS_BOUND_MIB` and every engine table stayed
within its limit; the attacker's connection ended with the expected close code; and a well-behaved client on
127.0.0.1 kept completing echo round trips during the attack (live.GoodClient). Run with -s for the FIGURES lines.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aqueduct.quic.certs import DevCerts, make_client_cert
from aqueduct.wire.channel_id import ENTRYPOINT, ChannelId, Side
from aqueduct.wire.errors import CloseCode
from aqueduct.wire.frames import Message, encode_frames
from aqueduct.wire.varint import MAX_VARINT, encode_varint

from .hostile import RawPeer, raw_peer
from .live import GUARD, GoodClient, LiveServer, Watch, figures, live_server

LIMITS: dict[str, object] = {
    "max_frame_size": 64 * 1024,
    "max_channels": 256,
    "max_pending_receivers": 64,
    "max_buffered_bytes": 256 * 1024,
    "stream_window": 128 * 1024,
    "connection_window": 512 * 1024,
    "handshake_timeout": 3.0,
    "max_connections_per_address": 8,
}
RSS_BOUND_MIB = 48.0
"""Resident memory one attack may add to the server process (its limits allow a few MiB; slack for the
allocator and the interpreter)."""


def to_server(i: int) -> int:
    return ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=i)


async def run_attack(certs: DevCerts, name: str, attack: Any, expected: int, limits: dict[str, object] | None = None,
                     *, hello: bool = True, kind: str = "application", serve: tuple[str, ...] = (),
                     peer_options: dict[str, Any] | None = None, typed: bool = False) -> tuple[Watch, int]:
    """Serve, start a good client, attack, wait for the attacker's close; check memory, tables, code, service.
    `typed`: the server is live.py's typed one (it reads the `schema` header), not `aqueduct serve --echo`."""
    async with asyncio.timeout(4 * GUARD), live_server(certs, {**LIMITS, **(limits or {})}, *serve,
                                                       typed=typed) as server:
        async with GoodClient(server.url, certs, typed=typed, **(peer_options or {})) as good:
            await asyncio.wait_for(good.served_during(), GUARD)
            async with Watch(server) as watch:
                peer = await raw_peer(server.port, certs, wait=hello)
                if hello:
                    peer.hello()
                await attack(peer, server)
                ended = await asyncio.wait_for(peer.ended, GUARD)
                served = await asyncio.wait_for(good.served_during(), GUARD)
        how = "application" if ended.frame_type is None else "transport"
        figures(name, watch, close_code=f"{ended.error_code} ({how}: {ended.reason_phrase!r})",
                good_round_trips=served)
        assert (ended.error_code, how) == (expected, kind), ended
        assert watch.growth_mib < RSS_BOUND_MIB
        assert watch.peak_tables.get("senders", 0) + watch.peak_tables.get("receivers", 0) <= 256 + 4
        assert watch.peak_tables.get("pending_receivers", 0) <= 64
        assert watch.peak_tables.get("held_bytes", 0) <= 256 * 1024
        assert watch.after is not None
        return watch, ended.error_code


async def test_a_client_without_a_certificate(certs: DevCerts, tmp_path: Path) -> None:
    """Against `--client-ca`: refused in the handshake (TLS alert certificate_required), counted, never served."""
    cert, key = make_client_cert(certs.ca.parent, "good")

    async def attack(peer: RawPeer, server: LiveServer) -> None:
        await asyncio.wait_for(peer.ended, GUARD)
        await server.counter_reaches("aqueduct_auth_failures_total", 1)

    await run_attack(certs, "live_no_client_certificate", attack, 0x100 + 116, hello=False, kind="transport",
                     serve=("--client-ca", str(certs.ca)), peer_options={"cert": cert, "key": key})


async def test_attachment_flood(certs: DevCerts) -> None:
    async def attack(peer: RawPeer, _server: LiveServer) -> None:
        sid = peer.new_stream()
        index = 1
        for n in range(100):
            peer.frames(sid, [Message(ENTRYPOINT, n, tuple(to_server(index + k) for k in range(50)), b"x")])
            index += 50
            if peer.is_closed:
                break

    await run_attack(certs, "live_attachment_flood", attack, CloseCode.LIMIT_EXCEEDED)


async def test_never_created_channels(certs: DevCerts) -> None:
    async def attack(peer: RawPeer, _server: LiveServer) -> None:
        for i in range(1, 3001):
            if peer.is_closed:
                break
            peer.frames(peer.new_stream(), [Message(to_server(i), 0, (), b"never created")], fin=True)
            if i % 100 == 0:
                await asyncio.sleep(0)

    await run_attack(certs, "live_never_created_channels", attack, CloseCode.LIMIT_EXCEEDED)


async def test_huge_declared_length(certs: DevCerts) -> None:
    async def attack(peer: RawPeer, _server: LiveServer) -> None:
        head = bytes([0x03]) + encode_varint(ENTRYPOINT) + encode_varint(0) + encode_varint(0)
        peer.write(peer.new_stream(), head + encode_varint(1 << 40) + b"abc")

    await run_attack(certs, "live_huge_declared_length", attack, CloseCode.LIMIT_EXCEEDED)


# ---- the four inputs of issue 16 (item 3): each reproduced first by tests/core/test_peer_bounds.py ----

BOUNDS: dict[str, object] = {"max_ack_ranges": 256, "max_ack_ranges_per_connection": 1024,
                             "partial_frame_timeout": 2.0}
GAPPED = 50_000
"""Messages the gapped-numbers attacks send at most (numbers 0, 2, 4, ...): before the fix, one range each (the
SECURITY.md figures were taken with 200 000); the caps end them after a few hundred."""


async def test_gapped_message_numbers_on_a_stream(certs: DevCerts) -> None:
    async def attack(peer: RawPeer, _server: LiveServer) -> None:
        sid = peer.new_stream()
        for start in range(0, 2 * GAPPED, 2000):
            if peer.is_closed:
                break
            peer.write(sid, encode_frames([Message(ENTRYPOINT, n, (), b"x") for n in range(start, start + 2000, 2)]))
            await asyncio.sleep(0)  # let aioquic send as the window allows

    watch, _ = await run_attack(certs, "live_gapped_stream_numbers", attack, CloseCode.LIMIT_EXCEEDED, BOUNDS)
    assert watch.peak_tables.get("ack_ranges", 0) <= 1024


async def test_gapped_message_numbers_in_datagrams(certs: DevCerts) -> None:
    """Unreliable: past the cap the receiver nacks its oldest gaps instead of closing; the attacker is cut off
    by nothing else, so it ends its own connection after the flood."""

    async def attack(peer: RawPeer, _server: LiveServer) -> None:
        for start in range(0, 2 * GAPPED, 200):
            if peer.is_closed:
                break
            peer.quic.send_datagram_frame(encode_frames([Message(ENTRYPOINT, n, (), b"")
                                                         for n in range(start, start + 200, 2)]))
            peer.transmit()
            if start % 20_000 == 0:
                await asyncio.sleep(0.001)  # paces the flood so loopback does not drop it all
        await asyncio.sleep(0.5)
        peer.close(error_code=0)

    watch, _ = await run_attack(certs, "live_gapped_datagram_numbers", attack, CloseCode.NO_ERROR, BOUNDS)
    assert watch.peak_tables.get("ack_ranges", 0) <= 256


async def test_message_number_at_the_top_of_the_varint_range(certs: DevCerts) -> None:
    async def attack(peer: RawPeer, _server: LiveServer) -> None:
        sid = peer.new_stream()
        peer.frames(sid, [Message(ENTRYPOINT, MAX_VARINT, (), b"top")])  # its ack would end at 2^64

    await run_attack(certs, "live_top_message_number", attack, CloseCode.PROTOCOL_VIOLATION, BOUNDS)


async def test_empty_datagrams_before_the_headers(certs: DevCerts) -> None:
    async def attack(peer: RawPeer, _server: LiveServer) -> None:
        for i in range(1_000_000):
            if peer.is_closed:
                break
            peer.quic.send_datagram_frame(b"")
            if i % 1000 == 999:
                peer.transmit()
                await asyncio.sleep(0)

    await run_attack(certs, "live_empty_datagrams_before_headers", attack, CloseCode.LIMIT_EXCEEDED, BOUNDS,
                     hello=False)


async def test_a_frame_dripped_byte_by_byte(certs: DevCerts) -> None:
    async def attack(peer: RawPeer, _server: LiveServer) -> None:
        data = encode_frames([Message(ENTRYPOINT, 0, (), b"d" * 64)])
        sid = peer.new_stream()
        for byte in data[:-1]:
            if peer.is_closed:
                break
            peer.write(sid, bytes([byte]))
            await asyncio.sleep(0.1)  # the drip itself: one byte every 100 ms

    await run_attack(certs, "live_dripped_frame", attack, CloseCode.LIMIT_EXCEEDED, BOUNDS)

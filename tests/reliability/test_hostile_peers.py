"""Hostile peers over real aioquic on loopback: a raw client misbehaves, the echo server stays bounded.

Each test attacks the echo server (`aqueduct serve --echo`'s service) with a
raw aioquic client speaking our wire codec from 127.0.0.2, measures what
the server connection holds after every batch it processes (see
hostile.PeakTracker), checks it against the bounds the suite configured
(hostile.SETTINGS / ENGINE), and checks that a well-behaved client on
127.0.0.1 still completes an echo round trip. Figures are printed (-s).
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from aioquic.quic.connection import QuicConnection

import aqueduct
from aqueduct.api.codec import RawCodec
from aqueduct.api.connection import link_of
from aqueduct.bench.clients import WaitableTickets
from aqueduct.quic.certs import DevCerts
from aqueduct.testing.impair import ImpairProxy
from aqueduct.wire.channel_id import ENTRYPOINT, ChannelId, Side
from aqueduct.wire.errors import CloseCode
from aqueduct.wire.frames import Message, SentUnreliable, encode_frame
from aqueduct.wire.varint import encode_varint
from tests.api.conftest import readdress_ticket

from .hostile import (
    BYTES_BOUND,
    ENGINE,
    GUARD,
    HOSTILE_HOST,
    SETTINGS,
    PeakTracker,
    attack,
    client_config,
    echo_server,
    raw_peer,
    round_trip,
    until,
)


def to_client(i: int) -> int:
    """A client-minted channel whose receiver is the client (the server gets its sender)."""
    return ChannelId.make(to=Side.CLIENT, minted_by=Side.CLIENT, oneshot=False, index=i)


def to_server(i: int) -> int:
    """A client-minted channel whose receiver is the server."""
    return ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=i)


def report(name: str, peak: dict[str, int], **extra: Any) -> None:
    keys = ("senders", "receivers", "pending_receivers", "held_bytes", "queued_bytes", "quic_streams",
            "quic_recv_buffered", "quic_send_buffered", "bytes")
    print(f"\nFIGURES {name}: " + ", ".join(f"{k}={peak.get(k, 0)}" for k in keys)
          + "".join(f", {k}={v}" for k, v in extra.items()))


def assert_bounded(peak: dict[str, int]) -> None:
    assert peak.get("senders", 0) + peak.get("receivers", 0) <= ENGINE.max_channels + 2
    assert peak.get("pending_receivers", 0) <= ENGINE.max_pending_receivers
    assert peak.get("held_bytes", 0) <= ENGINE.max_buffered_bytes
    assert peak.get("bytes", 0) <= BYTES_BOUND


async def assert_cut_off(name: str, tracker: PeakTracker, url: str, certs: DevCerts) -> None:
    """The server closed the attacker with LIMIT_EXCEEDED, stayed bounded and still serves a good client."""
    code = await tracker.server_close()
    rtt = await round_trip(url, certs)
    report(name, tracker.peak, close_code=code, good_rtt_ms=round(rtt * 1000, 1))
    assert code == CloseCode.LIMIT_EXCEEDED
    assert_bounded(tracker.peak)


async def test_attachment_flood_is_cut_at_max_channels(certs: DevCerts) -> None:
    tracker = PeakTracker()
    async with attack(certs, tracker) as (url, peer):
        sid = peer.new_stream()
        index = 1
        for n in range(100):  # 100 messages x 50 attached receivers = 5000 channels asked for
            ids = tuple(to_server(index + k) for k in range(50))
            index += 50
            peer.frames(sid, [Message(ENTRYPOINT, n, ids, b"x")])
            if tracker.closes:
                break
        await assert_cut_off("attachment_flood", tracker, url, certs)


async def test_messages_for_thousands_of_never_created_channels(certs: DevCerts) -> None:
    tracker = PeakTracker()
    async with attack(certs, tracker) as (url, peer):
        for i in range(1, 3001):  # aioquic sends them as the server's stream credit allows
            if tracker.closes:
                break
            peer.frames(peer.new_stream(), [Message(to_server(i), 0, (), b"never created")], fin=True)
            if i % 100 == 0:
                await asyncio.sleep(0)  # let the server run between bursts
        await assert_cut_off("never_created_channels", tracker, url, certs)
    # the pending-receiver limit is what cut it off (at exactly that many pending: the peak itself may fall
    # between two samples, which come once per burst of datagrams the server reads)
    cut = tracker.reasons[tracker.closes.index(CloseCode.LIMIT_EXCEEDED)]
    assert f"max_pending_receivers={ENGINE.max_pending_receivers}" in cut


async def test_huge_declared_length_is_refused_before_buffering(certs: DevCerts) -> None:
    tracker = PeakTracker()
    async with attack(certs, tracker) as (url, peer):
        head = bytes([0x03]) + encode_varint(ENTRYPOINT) + encode_varint(0) + encode_varint(0)
        peer.write(peer.new_stream(), head + encode_varint(1 << 40) + b"abc")
        await assert_cut_off("huge_declared_length", tracker, url, certs)


async def test_many_partial_frames_stay_within_the_receive_window(certs: DevCerts) -> None:
    """Frames declared just under the limit, left unfinished on many streams: held bytes stop at the window."""
    tracker = PeakTracker()
    async with attack(certs, tracker) as (url, peer):
        declared = ENGINE.max_frame_size - 64
        sent = 0
        for i in range(1, 41):
            head = bytes([0x03]) + encode_varint(to_server(i)) + encode_varint(0) + encode_varint(0)
            sid = peer.new_stream()
            data = head + encode_varint(declared) + b"y" * (declared - 1024)
            peer.write(sid, data)  # aioquic queues what flow control does not allow yet
            sent += len(data)
        await until(lambda: tracker.peak.get("quic_recv_buffered", 0) + tracker.peak.get("held_bytes", 0)
                    >= SETTINGS.connection_window // 2 or bool(tracker.closes), "the window filled")
        closes = list(tracker.closes)  # the attacker's connection only (the good client's comes next)
        rtt = await round_trip(url, certs)
    report("partial_frames", tracker.peak, attempted_bytes=sent, closes=closes,
           good_rtt_ms=round(rtt * 1000, 1))
    assert closes in ([], [CloseCode.LIMIT_EXCEEDED])
    assert_bounded(tracker.peak)
    assert tracker.peak["held_bytes"] <= SETTINGS.connection_window


async def test_receiver_that_never_reads_blocks_the_sender_not_memory(certs: DevCerts) -> None:
    tracker = PeakTracker()
    # paced, with small windows: the client never grants more than its first 64 KiB
    async with attack(certs, tracker, paced=True, max_data=64 * 1024, max_stream_data=32 * 1024) as (url, peer):
        sid = peer.new_stream()
        payload = b"z" * 30_000
        for n in range(40):  # asks the echo to send back 40 x 30 KB = 1.2 MB on 40 channels
            peer.frames(sid, [Message(ENTRYPOINT, n, (to_client(n + 1),), payload)])
        await until(lambda: tracker.peak.get("senders", 0) >= 20, "the echo started answering")
        closes = list(tracker.closes)
        rtt = await round_trip(url, certs)
    report("never_reads", tracker.peak, closes=closes, good_rtt_ms=round(rtt * 1000, 1))
    assert closes == []  # a slow reader is not an offence: its channels just wait
    assert tracker.peak["quic_send_buffered"] <= SETTINGS.connection_send_buffer + len(payload) + 4096
    assert_bounded(tracker.peak)


async def test_peer_that_never_acks_stays_bounded(certs: DevCerts) -> None:
    """The echo answers on 600 channels whose receiver (the raw client) never acks nor closes them."""
    tracker = PeakTracker()
    async with attack(certs, tracker) as (url, peer):  # the peer reads at QUIC level, never sends an Aqueduct ack
        sid = peer.new_stream()
        for n in range(600):
            if tracker.closes:
                break
            peer.frames(sid, [Message(ENTRYPOINT, n, (to_client(n + 1),), b"ack me")])
            if n % 50 == 0:
                await asyncio.sleep(0)
        # the un-acked channels keep their QUIC streams open, so the peer's stream credit runs out first
        await until(lambda: bool(tracker.closes) or tracker.peak.get("senders", 0) >= 100, "the echo answered")
        closes = list(tracker.closes)
        rtt = await round_trip(url, certs)
    report("never_acks", tracker.peak, closes=closes, good_rtt_ms=round(rtt * 1000, 1))
    assert closes in ([], [CloseCode.LIMIT_EXCEEDED])
    assert_bounded(tracker.peak)


async def test_endless_sent_unreliable_counts(certs: DevCerts) -> None:
    tracker = PeakTracker()
    async with attack(certs, tracker) as (url, peer):
        peer.frames(peer.new_stream(), [Message(ENTRYPOINT, 0, (), b"hello")])
        await until(lambda: bool(peer.server_streams) or bool(tracker.closes), "the entrypoint control stream")
        ctrl = next(s for s in peer.server_streams if not s & 2)  # the server's bidi control stream
        frames = b"".join(encode_frame(SentUnreliable(c)) for c in (1, 1000, (1 << 40), 7) * 500)
        for _ in range(20):  # 40 000 SentUnreliable frames, counts up to 2**40
            if tracker.closes:
                break
            peer.write(ctrl, frames)
            await asyncio.sleep(0)
        stream: Any = peer.quic._streams[ctrl]
        await until(lambda: bool(tracker.closes) or stream.sender.buffer_is_empty, "the server took every frame")
        closes = list(tracker.closes)
        rtt = await round_trip(url, certs)
    report("endless_sent_unreliable", tracker.peak, closes=closes, good_rtt_ms=round(rtt * 1000, 1))
    assert closes in ([], [CloseCode.LIMIT_EXCEEDED], [CloseCode.PROTOCOL_VIOLATION])
    assert_bounded(tracker.peak)


async def test_slow_loris_handshakes_hold_slots_only_until_the_deadline(certs: DevCerts) -> None:
    """Half-open handshakes from one address: capped per address, and every slot comes back after the deadline."""
    async with echo_server(certs) as (url, server):
        qs: Any = server
        port = server.address[1]
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((HOSTILE_HOST, 0))
        sock.setblocking(False)
        loop = asyncio.get_running_loop()
        for _ in range(40):  # each sends its ClientHello and then never answers
            quic = QuicConnection(configuration=client_config(certs))
            quic.connect(("127.0.0.1", port), now=loop.time())
            for data, _addr in quic.datagrams_to_send(now=loop.time()):
                sock.sendto(data, ("127.0.0.1", port))
        limits = _limits(qs)
        await until(lambda: limits.per_address.get(HOSTILE_HOST, 0) == SETTINGS.max_connections_per_address,
                    "slots taken")
        rtt = await round_trip(url, certs)  # the good client gets in while the attacker is capped
        await until(lambda: limits.per_address.get(HOSTILE_HOST, 0) == 0, "slots freed at the deadline")
        sock.close()
    print(f"\nFIGURES slow_loris: refused={limits.refused}, start_timeouts={limits.start_timeouts}, "
          f"good_rtt_ms={round(rtt * 1000, 1)}")
    assert limits.refused >= 40 - SETTINGS.max_connections_per_address
    assert limits.start_timeouts >= 1


async def test_handshake_without_headers_is_closed_at_the_deadline(certs: DevCerts) -> None:
    async with echo_server(certs) as (url, server):
        tracker = PeakTracker()
        tracker.watch(server)
        await raw_peer(server.address[1], certs)  # completes TLS, never sends ConnectionControl
        code = await tracker.server_close()
        await round_trip(url, certs)
    assert code == CloseCode.LIMIT_EXCEEDED


async def test_many_connections_from_one_address_are_capped(certs: DevCerts) -> None:
    async with echo_server(certs) as (url, server):
        limits = _limits(server)
        port = server.address[1]
        peers = []
        for _ in range(SETTINGS.max_connections_per_address):
            peer = await raw_peer(port, certs)
            peer.hello()
            peers.append(peer)
        extra = await raw_peer(port, certs, wait=False)
        extra_done = asyncio.ensure_future(extra.wait_connected())
        rtt = await round_trip(url, certs)  # other addresses are not affected
        await until(lambda: limits.refused >= 1, "the extra connection was refused")
        assert not extra_done.done()
        peers[0].close()
        await until(lambda: limits.per_address.get(HOSTILE_HOST, 0) < SETTINGS.max_connections_per_address,
                    "a slot freed")
        late = await raw_peer(port, certs)  # a slot came back
        late.close()
        extra_done.cancel()
        for p in peers[1:]:
            p.close()
    print(f"\nFIGURES per_address: limit={SETTINGS.max_connections_per_address}, refused={limits.refused}, "
          f"good_rtt_ms={round(rtt * 1000, 1)}")


def _limits(server: Any) -> Any:
    """The LimitedQuicServer behind an aqueduct Server."""
    return server.admission


async def test_replayed_zero_rtt_flights_are_held_bounded_and_never_processed(certs: DevCerts) -> None:
    """An attacker replays a 0-RTT first flight 30 times from another address: one delivery, bounded holds."""
    seen: list[bytes] = []
    tracker = PeakTracker()

    async def handler(conn: aqueduct.Connection) -> None:
        async for msg in conn.entrypoint:  # records, and echoes to attached senders
            seen.append(msg.data)
            for half in msg.attachments:
                await half.send(msg.data)
                await half.finish()

    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, codec=RawCodec(), settings=SETTINGS,
                              engine_config=ENGINE) as server:
        tracker.watch(server)
        tasks: set[asyncio.Task[None]] = set()

        async def accept() -> None:
            async for conn in server:
                tasks.add(asyncio.ensure_future(handler(conn)))

        acceptor = asyncio.ensure_future(accept())
        url = f"aqueduct://127.0.0.1:{server.address[1]}"
        store = WaitableTickets()
        async with aqueduct.connect(url, ca=certs.ca, session_ticket_store=store, codec=RawCodec()):
            await asyncio.wait_for(store.arrived.wait(), GUARD)
        proxy = await ImpairProxy.start(server.address)
        proxy.record = True
        readdress_ticket(store, server.address, proxy.address)
        conn = await aqueduct.connect(f"aqueduct://127.0.0.1:{proxy.address[1]}", ca=certs.ca, codec=RawCodec(),
                                      session_ticket_store=store, server_name="127.0.0.1")
        assert link_of(conn).protocol.early_data_attempted
        await conn.entrypoint.send(b"pay once")  # 0-RTT
        await until(lambda: seen == [b"pay once"], "the original delivery")
        proxy.record = False
        await conn.close()
        admission = server.admission
        for _ in range(3):  # 3 rounds of 10 concurrent replays from fresh ports
            socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(10)]
            for sock in socks:
                sock.bind((HOSTILE_HOST, 0))
                for data in proxy.recorded:
                    sock.sendto(data, server.address)
            await until(lambda: admission.per_address.get(HOSTILE_HOST, 0) == 0, "replayed connections ended")
            for sock in socks:
                sock.close()
        rtt = await round_trip(url, certs)
        acceptor.cancel()
        proxy.close()
    report("zero_rtt_replay", tracker.peak, deliveries=len(seen), start_timeouts=admission.start_timeouts,
           good_rtt_ms=round(rtt * 1000, 1))
    assert seen == [b"pay once", b"ping"]  # the original, then the good client's round trip; no replay ran
    assert_bounded(tracker.peak)

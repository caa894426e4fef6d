"""Four inputs that broke the engine's promises (issue 16), each reproduced on a lone server engine fed crafted
bytes: gapped message numbers growing the ack range sets, a message number the codec cannot re-encode in an ack,
empty datagrams counted as 0 bytes before the headers, and a frame dripped byte by byte held forever. Each ends
with a coded close (or, for datagrams, with the oldest gaps nacked) and every table bounded on the way."""

from __future__ import annotations

import pytest
from core_helpers import close_code, feed, server_ready

from aqueduct.core.config import EngineConfig
from aqueduct.core.engine import Engine
from aqueduct.core.transport import (
    CloseConnection,
    DatagramReceived,
    SendStreamData,
    StreamDataReceived,
)
from aqueduct.wire.channel_id import ENTRYPOINT, ChannelId, Side
from aqueduct.wire.errors import CloseCode
from aqueduct.wire.frames import AckNackUnreliable, Message, SentUnreliable, encode_frames
from aqueduct.wire.reader import decode_frames
from aqueduct.wire.varint import MAX_VARINT

CAP = 64
CONFIG = EngineConfig(max_ack_ranges=CAP, max_ack_ranges_per_connection=4 * CAP, max_buffered_bytes=64 * 1024,
                      partial_frame_timeout=5.0)
UNI = 2  # the client's first unidirectional stream


def test_gapped_reliable_numbers_close_at_the_per_channel_cap() -> None:
    e = server_ready(CONFIG)
    peak = 0
    for n in range(0, 4 * CAP, 2):  # 0, 2, 4, ...: every message leaves a hole behind it
        feed(e, UNI, [Message(ENTRYPOINT, n, (), b"x")])
        e.handle_timer(e.now + 0.1)  # acks go out, and what they keep is what is left to bound
        if e.closed:
            break
        peak = max(peak, e.state_sizes()["ack_ranges"])
    assert close_code(e.commands()) == CloseCode.LIMIT_EXCEEDED
    assert peak <= CAP


def test_gapped_numbers_across_channels_close_at_the_per_connection_cap() -> None:
    """16 channels, each under the per-channel cap, together over the per-connection one."""
    e = server_ready(CONFIG)
    channels = tuple(ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=i)
                     for i in range(1, 17))
    feed(e, UNI, [Message(ENTRYPOINT, 0, channels, b"make")])
    peak = 0
    for n in range(0, CAP, 2):
        for k, ch in enumerate(channels):
            feed(e, UNI + 4 * (k + 1), [Message(ch, n, (), b"x")])
        e.handle_timer(e.now + 0.1)
        if e.closed:
            break
        peak = max(peak, e.state_sizes()["ack_ranges"])
    assert close_code(e.commands()) == CloseCode.LIMIT_EXCEEDED
    assert peak <= CONFIG.max_ack_ranges_per_connection


def test_gapped_datagram_numbers_nack_the_oldest_past_the_cap() -> None:
    e = server_ready(CONFIG)
    peak = 0
    for n in range(0, 8 * CAP, 2):
        e.handle_event(DatagramReceived(encode_frames([Message(ENTRYPOINT, n, (), b"x")])), e.now + 0.001)
        peak = max(peak, e.state_sizes()["ack_ranges"])
    e.handle_timer(e.now + 0.1)
    assert not e.closed
    assert peak <= CAP
    frames = [f for c in e.commands() if isinstance(c, SendStreamData) for f in decode_frames_safe(c.data)]
    assert any(isinstance(f, AckNackUnreliable) for f in frames)  # the oldest holes were nacked


def decode_frames_safe(data: bytes) -> list[object]:
    try:
        return list(decode_frames(data))
    except Exception:
        return []


@pytest.mark.spec("protocol-error")
def test_a_message_number_the_codec_cannot_ack_is_a_protocol_error() -> None:
    for stream in (True, False):
        e = server_ready(CONFIG)
        frame = Message(ENTRYPOINT, MAX_VARINT, (), b"top")
        for _ in range(2):
            if stream:
                feed(e, UNI, [frame])
            else:
                e.handle_event(DatagramReceived(encode_frames([frame])), 0.0)
        e.handle_timer(1.0)
        assert close_code(e.commands()) == CloseCode.PROTOCOL_VIOLATION, stream


def test_a_sent_unreliable_count_past_the_codec_is_a_protocol_error() -> None:
    e = server_ready(CONFIG)
    # the entrypoint's control stream is the server's first bidi stream (1): SentUnreliable comes on it
    feed(e, 1, [SentUnreliable(MAX_VARINT)])
    feed(e, 1, [SentUnreliable(5)])
    e.handle_timer(5.0)
    assert close_code(e.commands()) == CloseCode.PROTOCOL_VIOLATION


def test_empty_datagrams_before_the_headers_count_against_the_buffer() -> None:
    e = Engine(Side.SERVER, config=CONFIG)  # before the handshake: everything is held
    held = 0
    while not e.closed and held < 100_000:
        e.handle_event(DatagramReceived(b""), 0.0)
        held += 1
    assert close_code(e.commands()) == CloseCode.LIMIT_EXCEEDED
    assert held <= CONFIG.max_buffered_bytes // 16


def test_a_dripped_frame_is_closed_at_the_partial_frame_deadline() -> None:
    e = server_ready(CONFIG)
    data = encode_frames([Message(ENTRYPOINT, 0, (), b"z" * 100)])
    now = 0.0
    for byte in data[:-1]:  # one byte a second, never the last one
        now += 1.0
        e.handle_event(StreamDataReceived(UNI, bytes([byte])), now)
        deadline = e.next_deadline()
        if deadline is not None and deadline <= now + 1.0:
            e.handle_timer(deadline)
        if e.closed:
            break
    assert close_code(e.commands()) == CloseCode.LIMIT_EXCEEDED
    assert now <= CONFIG.partial_frame_timeout + 1.0


def test_a_stream_without_a_complete_frame_is_closed_at_the_deadline() -> None:
    e = server_ready(CONFIG)
    e.handle_event(StreamDataReceived(UNI, b""), 0.0)  # opened, nothing in it
    deadline = e.next_deadline()
    assert deadline is not None and deadline <= CONFIG.partial_frame_timeout
    e.handle_timer(deadline)
    assert close_code(e.commands()) == CloseCode.LIMIT_EXCEEDED


def test_a_slow_but_complete_frame_is_not_cut() -> None:
    e = server_ready(CONFIG)
    data = encode_frames([Message(ENTRYPOINT, 0, (), b"z" * 8)])
    for i, byte in enumerate(data):
        e.handle_event(StreamDataReceived(UNI, bytes([byte])), i * CONFIG.partial_frame_timeout / (len(data) + 1))
    e.handle_timer(CONFIG.partial_frame_timeout * 3)
    assert not e.closed
    assert not [c for c in e.commands() if isinstance(c, CloseConnection)]

"""Receiver-paced credit: every stream byte comes back exactly once through GrantCredit."""

from __future__ import annotations

from collections import Counter

import pytest
from core_helpers import client_ready, server_ready

from aqueduct.core.app import AttachKind
from aqueduct.core.transport import DatagramReceived, GrantCredit, StreamDataReceived, StreamReset
from aqueduct.wire.channel_id import ChannelId, Side
from aqueduct.wire.frames import (
    ChannelControl,
    ClosedChannelLost,
    FinishSender,
    Message,
    SentUnreliable,
    Version,
    encode_frames,
)


def _credit(cmds) -> Counter[int]:  # type: ignore[no-untyped-def]
    out: Counter[int] = Counter()
    for c in cmds:
        if isinstance(c, GrantCredit):
            out[c.stream_id] += c.nbytes
    return out


def test_message_bytes_return_when_taken_other_bytes_at_once() -> None:
    s = server_ready()
    rx = s.entrypoint or 0
    msgs = encode_frames([Version(), Message(0, 0, (), b"a" * 100), Message(0, 1, (), b"b" * 50)])
    s.handle_event(StreamDataReceived(2, msgs), 0.0)
    first = _credit(s.commands())
    assert first[2] == len(encode_frames([Version()]))  # only the Version so far
    s.take_message(rx)
    assert _credit(s.commands())[2] == len(encode_frames([Message(0, 0, (), b"a" * 100)]))
    s.take_message(rx)
    assert _credit(s.commands())[2] == len(encode_frames([Message(0, 1, (), b"b" * 50)]))
    ctrl = encode_frames([SentUnreliable(1)])
    s.handle_event(StreamDataReceived(1, ctrl), 0.0)
    assert _credit(s.commands())[1] == len(ctrl)


@pytest.mark.spec("stream-reset.partial")
def test_every_byte_returns_exactly_once_across_discards_drops_and_resets() -> None:
    s = server_ready()
    rx = s.entrypoint or 0
    fed: Counter[int] = Counter()
    granted: Counter[int] = Counter()

    def push(sid: int, data: bytes, end: bool = False) -> None:
        fed[sid] += len(data)
        s.handle_event(StreamDataReceived(sid, data, end), 0.0)
        granted.update(_credit(s.commands()))

    stray = ChannelId.make(to=Side.SERVER, minted_by=Side.SERVER, oneshot=False, index=7)
    push(2, encode_frames([Message(0, 0, (), b"kept"), Message(0, 1, (), b"queued")]))
    push(6, encode_frames([Message(stray, 0, (), b"dropped")]), end=True)
    gone = ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=9)
    push(10, encode_frames([ClosedChannelLost(gone)]), end=True)
    push(14, encode_frames([Message(0, 2)])[:3])  # a partial frame, then the stream is reset
    s.handle_event(StreamReset(14, 2), 0.0)
    granted.update(_credit(s.commands()))
    unknown = ChannelId.make(to=Side.SERVER, minted_by=Side.SERVER, oneshot=False, index=9)
    push(4, encode_frames([ChannelControl(unknown)]))  # refused (reset 'lost'); its bytes still return
    s.take_message(rx)
    granted.update(_credit(s.commands()))
    push(1, encode_frames([FinishSender(5)]), end=False)
    s.drop_receiver(rx)  # discards "queued"
    granted.update(_credit(s.commands()))
    assert granted == fed


def test_datagrams_take_no_credit() -> None:
    s = server_ready()
    s.handle_event(DatagramReceived(encode_frames([Message(0, 0)])), 0.0)
    s.take_message(s.entrypoint or 0)
    assert _credit(s.commands()) == Counter()


def test_discarded_queue_returns_credit_of_nested_attachments() -> None:
    s = server_ready()
    inner = ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=3)
    data = encode_frames([Message(0, 0, (inner,), b"outer")])
    more = encode_frames([Message(inner, 0, (), b"inner")])
    s.handle_event(StreamDataReceived(2, data), 0.0)
    s.handle_event(StreamDataReceived(6, more), 0.0)
    s.commands()
    s.drop_receiver(s.entrypoint or 0)
    assert _credit(s.commands()) == Counter({2: len(data), 6: len(more)})


def test_a_message_for_a_receiver_closing_without_its_control_stream_is_credited_once() -> None:
    c = client_ready()
    rx = c.send(1, b"x", [AttachKind.SENDER]).created[0]
    c.commands()
    c.close_receiver(rx)  # waits for the control stream; messages meanwhile are processed and dropped
    cid = ChannelId.make(to=Side.CLIENT, minted_by=Side.CLIENT, oneshot=False, index=0)
    data = encode_frames([Message(cid, 0, (), b"late")])
    c.handle_event(StreamDataReceived(3, data), 0.0)
    assert _credit(c.commands()) == Counter({3: len(data)})


def test_a_frame_larger_than_the_window_is_credited_while_it_arrives() -> None:
    s = server_ready()
    rx = s.entrypoint or 0
    data = encode_frames([Message(0, 0, (), b"z" * 5000)])
    granted = 0
    for i in range(0, len(data), 1000):  # the transport window lets 1000 bytes through at a time
        s.handle_event(StreamDataReceived(2, data[i : i + 1000]), 0.0)
        granted += _credit(s.commands())[2]
        if i + 1000 < len(data):
            assert granted == i + 1000  # every partial byte is credited at once, or the frame could never complete
    assert s.take_message(rx) is not None
    granted += _credit(s.commands())[2]
    assert granted == len(data)  # and nothing twice

"""Every protocol error closes the connection with a code; none raises out of handle_event."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from core_helpers import client_ready, close_code, feed, of, server_ready

from aqueduct.core.app import ConnectionClosed, Delivery, ReceiverEnded, SenderEnded
from aqueduct.core.engine import Engine
from aqueduct.core.transport import DatagramReceived, StreamDataReceived, StreamReset
from aqueduct.errors import ConnectionLost
from aqueduct.wire.channel_id import ChannelId, Side
from aqueduct.wire.errors import CloseCode
from aqueduct.wire.frames import (
    AckNackUnreliable,
    AckReliable,
    ChannelControl,
    ClosedChannelLost,
    CloseReceiver,
    ConnectionControl,
    FinishSender,
    Message,
    SentUnreliable,
    Version,
    encode_frames,
)

PV = CloseCode.PROTOCOL_VIOLATION
TO_CLIENT_BY_CLIENT = ChannelId.make(to=Side.CLIENT, minted_by=Side.CLIENT, oneshot=False, index=0)
TO_SERVER_BY_SERVER = ChannelId.make(to=Side.SERVER, minted_by=Side.SERVER, oneshot=False, index=0)
TO_CLIENT_BY_SERVER = ChannelId.make(to=Side.CLIENT, minted_by=Side.SERVER, oneshot=False, index=0)
TO_SERVER_BY_CLIENT = ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=1)
ONESHOT_TO_SERVER = ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=True, index=0)


def _client_with_sent(n: int = 3, unreliable: int = 0) -> Engine:
    """A client that sent n reliable (and some unreliable) entrypoint messages, control stream attached."""
    c = client_ready()
    for _ in range(n):
        c.send(1, b"x")
    for _ in range(unreliable):
        c.send(1, b"u", delivery=Delivery.UNRELIABLE)
    feed(c, 1, [ChannelControl(0)])
    c.commands()
    return c


# Server-side cases: the server engine has the client's headers; stream 1 is the entrypoint's control stream.
SERVER_CASES: dict[str, tuple[Callable[[Engine], None], int]] = {
    "ConnectionControl twice": (lambda e: feed(e, 0, [ConnectionControl(())]), PV),
    "ConnectionControl on another bidi stream": (lambda e: feed(e, 4, [Version(), ConnectionControl(())]), PV),
    "ConnectionControl on a uni stream": (lambda e: feed(e, 2, [Version(), ConnectionControl(())]), PV),
    "Version not first on a stream": (lambda e: feed(e, 2, [Message(0, 0), Version()]), PV),
    "Version not first in a datagram": (
        lambda e: e.handle_event(DatagramReceived(encode_frames([Message(0, 0), Version()])), 0.0),
        PV,
    ),
    "Version mismatch": (lambda e: feed(e, 2, [Version("9.9.9")]), CloseCode.VERSION_MISMATCH),
    "Message on a peer-opened bidi stream": (lambda e: feed(e, 4, [Message(0, 0)]), PV),
    "Message on a control stream": (lambda e: feed(e, 1, [Message(0, 0)]), PV),
    "frame after FinishSender": (lambda e: feed(e, 1, [FinishSender(0), SentUnreliable(1)]), PV),
    "ack sent to a receiver": (lambda e: feed(e, 1, [AckReliable((1,))]), PV),
    "CloseReceiver sent to a receiver": (lambda e: feed(e, 1, [CloseReceiver(())]), PV),
    "ChannelControl on a uni stream": (lambda e: feed(e, 2, [ChannelControl(TO_CLIENT_BY_SERVER)]), PV),
    "SentUnreliable on a uni stream": (lambda e: feed(e, 2, [SentUnreliable(1)]), PV),
    "ClosedChannelLost on a bidi stream": (lambda e: feed(e, 4, [ClosedChannelLost(TO_SERVER_BY_CLIENT)]), PV),
    "frame after ClosedChannelLost": (
        lambda e: feed(e, 2, [ClosedChannelLost(TO_SERVER_BY_CLIENT), ClosedChannelLost(TO_SERVER_BY_CLIENT)]),
        PV,
    ),
    "ClosedChannelLost for a channel the receiver minted": (
        lambda e: feed(e, 2, [ClosedChannelLost(TO_SERVER_BY_SERVER)]),
        PV,
    ),
    "ChannelControl for a channel minted by its opener": (lambda e: feed(e, 4, [ChannelControl(1 << 3)]), PV),
    "ChannelControl not first": (lambda e: feed(e, 4, [ChannelControl(TO_CLIENT_BY_SERVER)] * 2), PV),
    "data on a stream the server opened one-way": (lambda e: feed(e, 3, [Message(0, 0)]), PV),
    "Message on a channel flowing to the client": (lambda e: feed(e, 2, [Message(TO_CLIENT_BY_CLIENT, 0)]), PV),
    "attachment minted by the receiving side": (
        lambda e: feed(e, 2, [Message(0, 0, (TO_SERVER_BY_SERVER,))]),
        PV,
    ),
    "the entrypoint attached": (lambda e: feed(e, 2, [Message(0, 0, (0,))]), PV),
    "the same sender attached twice": (
        lambda e: feed(e, 2, [Message(0, 0, (TO_CLIENT_BY_CLIENT,)), Message(0, 1, (TO_CLIENT_BY_CLIENT,))]),
        PV,
    ),
    "the same receiver handed out twice": (
        lambda e: feed(e, 2, [Message(0, 0, (TO_SERVER_BY_CLIENT,)), Message(0, 1, (TO_SERVER_BY_CLIENT,))]),
        PV,
    ),
    "a reliable message number twice": (lambda e: feed(e, 2, [Message(0, 0), Message(0, 0)]), PV),
    "a message beyond the FinishSender count": (
        lambda e: (feed(e, 1, [FinishSender(2)]), feed(e, 2, [Message(0, 0), Message(0, 2)])),
        PV,
    ),
    "FinishSender below a received number": (
        lambda e: (feed(e, 2, [Message(0, 0), Message(0, 1)]), feed(e, 1, [FinishSender(1)])),
        PV,
    ),
    "second message on a oneshot channel": (
        lambda e: feed(e, 2, [Message(ONESHOT_TO_SERVER, 0), Message(ONESHOT_TO_SERVER, 0)]),
        PV,
    ),
    "message number 1 on a oneshot channel": (lambda e: feed(e, 2, [Message(ONESHOT_TO_SERVER, 1)]), PV),
    "reset code other than 1 and 2": (lambda e: e.handle_event(StreamReset(2, 7), 0.0), PV),
    "reset of the connection control stream": (lambda e: e.handle_event(StreamReset(0, 1), 0.0), PV),
    "finish of the connection control stream": (lambda e: e.handle_event(StreamDataReceived(0, b"", True), 0.0), PV),
    "control stream finished without FinishSender": (lambda e: feed(e, 1, [SentUnreliable(1)], end=True), PV),
    "stream finished without a frame": (lambda e: e.handle_event(StreamDataReceived(2, b"", True), 0.0), None),
    "stream finished inside a frame": (
        lambda e: e.handle_event(StreamDataReceived(2, b"\x03\x00", True), 0.0),
        CloseCode.FRAME_ENCODING,
    ),
    "unknown frame type": (lambda e: e.handle_event(StreamDataReceived(2, b"\x63"), 0.0), CloseCode.FRAME_ENCODING),
    "empty datagram": (lambda e: e.handle_event(DatagramReceived(b""), 0.0), CloseCode.FRAME_ENCODING),
    "ChannelControl in a datagram": (
        lambda e: e.handle_event(DatagramReceived(encode_frames([ChannelControl(TO_CLIENT_BY_SERVER)])), 0.0),
        PV,
    ),
}


@pytest.mark.spec("frames.placement", "reset-codes", "protocol-error")
@pytest.mark.parametrize("case", sorted(SERVER_CASES))
def test_server_side_protocol_error_closes_with_code(case: str) -> None:
    e = server_ready()
    fn, code = SERVER_CASES[case]
    fn(e)
    cmds = e.commands()
    if code is None:  # an empty stream: FrameReader rejects it as an encoding error
        assert close_code(cmds) == CloseCode.FRAME_ENCODING
    else:
        assert close_code(cmds) == code
    assert e.closed
    evs = e.events()
    assert of(evs, ConnectionClosed)
    assert [ev.receiver for ev in of(evs, ReceiverEnded)] == [e.entrypoint]  # ended once, maybe earlier


CLIENT_CASES: dict[str, Callable[[Engine], None]] = {
    "double AckReliable": lambda c: feed(c, 1, [AckReliable((0, 2, 1)), AckReliable((0, 2, 1))]),
    "AckReliable of an unsent message": lambda c: feed(c, 1, [AckReliable((5,))]),
    "AckNackUnreliable beyond what was sent": lambda c: feed(c, 1, [AckNackUnreliable((3,))]),
    "CloseReceiver nacking an acked message": lambda c: feed(c, 1, [AckReliable((0, 1, 1)), CloseReceiver((1, 1))]),
    "frame after CloseReceiver": lambda c: feed(c, 1, [CloseReceiver(()), AckReliable((1,))]),
    "SentUnreliable sent to a sender": lambda c: feed(c, 1, [SentUnreliable(1)]),
    "FinishSender sent to a sender": lambda c: feed(c, 1, [FinishSender(1)]),
    "control stream finished without CloseReceiver": lambda c: feed(c, 1, [AckReliable((1,))], end=True),
    "ConnectionControl from the server twice": lambda c: feed(c, 0, [ConnectionControl(())]),
}


@pytest.mark.spec("frames.placement", "protocol-error")
@pytest.mark.parametrize("case", sorted(CLIENT_CASES))
def test_client_side_protocol_error_closes_with_code(case: str) -> None:
    c = _client_with_sent(3, unreliable=2)
    CLIENT_CASES[case](c)
    assert close_code(c.commands()) == PV
    evs = c.events()
    assert [ev.sender for ev in of(evs, SenderEnded)] == [1]
    assert of(evs, ConnectionClosed)
    with pytest.raises(ConnectionLost):
        c.send(1, b"after")


@pytest.mark.spec("startup.server")
def test_server_connection_control_must_follow_version() -> None:
    from aqueduct.core.transport import HandshakeCompleted

    e = Engine(Side.SERVER)
    e.handle_event(HandshakeCompleted(), 0.0)
    feed(e, 0, [ConnectionControl(())])
    assert close_code(e.commands()) == PV


@pytest.mark.spec("frames.placement")
def test_datagram_with_only_version_is_ignored() -> None:
    e = server_ready()
    e.handle_event(DatagramReceived(encode_frames([Version()])), 0.0)
    assert close_code(e.commands()) is None

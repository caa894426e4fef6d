"""Connection start-up: Version + ConnectionControl, Version prefixes, the server's gates."""

from __future__ import annotations

import pytest
from core_helpers import close_code, feed, hello, of, pair, written

from aqueduct.core.app import Delivery, HeadersReceived, MessageAvailable
from aqueduct.core.config import EngineConfig
from aqueduct.core.engine import Engine
from aqueduct.core.transport import (
    DatagramReceived,
    HandshakeCompleted,
    SendDatagram,
    SendStreamData,
    StreamDataReceived,
)
from aqueduct.testing import NetConfig, Simulation
from aqueduct.wire.channel_id import Side
from aqueduct.wire.errors import CloseCode
from aqueduct.wire.frames import ChannelControl, ConnectionControl, Message, SentUnreliable, Version, encode_frames
from aqueduct.wire.reader import decode_frames


@pytest.mark.spec("startup.client")
def test_client_sends_version_and_headers_on_stream_0_at_construction() -> None:
    c = Engine(Side.CLIENT, headers=[("cbor-b3b650", b"v1")])
    cmds = c.commands()
    assert cmds[0] == SendStreamData(0, encode_frames([Version(), ConnectionControl((("cbor-b3b650", b"v1"),))]))
    assert c.entrypoint is not None


@pytest.mark.spec("startup.client")
def test_client_prefixes_version_until_it_has_the_server_headers() -> None:
    c = Engine(Side.CLIENT)
    c.commands()
    c.send(c.entrypoint or 0, b"a")
    c.send(c.entrypoint or 0, b"b", delivery=Delivery.UNRELIABLE)
    before = c.commands()
    stream = next(x for x in before if isinstance(x, SendStreamData))
    assert isinstance(decode_frames(stream.data)[0], Version)
    dgram = next(x for x in before if isinstance(x, SendDatagram))
    assert isinstance(decode_frames(dgram.data)[0], Version)
    feed(c, 0, [Version(), ConnectionControl(())])
    c.send(c.entrypoint or 0, b"c", delivery=Delivery.UNORDERED)
    c.send(c.entrypoint or 0, b"d", delivery=Delivery.UNRELIABLE)
    after = c.commands()
    stream = next(x for x in after if isinstance(x, SendStreamData))
    assert isinstance(decode_frames(stream.data)[0], Message)
    dgram = next(x for x in after if isinstance(x, SendDatagram))
    assert isinstance(decode_frames(dgram.data)[0], Message)


@pytest.mark.spec("startup.server")
def test_server_sends_nothing_and_processes_nothing_before_the_client_headers() -> None:
    s = Engine(Side.SERVER)
    s.handle_event(HandshakeCompleted(), 0.0)
    feed(s, 2, [Version(), Message(0, 0, (), b"early")])
    s.handle_event(DatagramReceived(encode_frames([Version(), Message(0, 0, (), b"dgram")])), 0.0)
    assert s.commands() == []  # not even credit: the held bytes are unprocessed
    assert s.events() == []
    assert s.state_sizes()["held_bytes"] > 0
    s.handle_event(StreamDataReceived(0, hello()), 0.0)
    cmds = s.commands()
    assert cmds[0] == SendStreamData(0, hello())  # the reply, first, on the same stream
    assert written(cmds, 1) == [ChannelControl(0)]  # the entrypoint receiver's control stream
    evs = s.events()
    assert evs[0] == HeadersReceived((), entrypoint=s.entrypoint)
    assert of(evs, MessageAvailable)
    taken = [s.take_message(s.entrypoint or 0), s.take_message(s.entrypoint or 0)]
    assert {m.payload for m in taken if m is not None} == {b"early", b"dgram"}
    assert s.state_sizes()["held_bytes"] == 0


@pytest.mark.spec("zero-rtt.server")
def test_server_holds_even_the_headers_until_the_handshake_completes() -> None:
    s = Engine(Side.SERVER)
    s.handle_event(StreamDataReceived(0, hello()), 0.0)
    feed(s, 2, [Version(), Message(0, 0)])
    assert s.commands() == [] and s.events() == []
    s.handle_event(HandshakeCompleted(), 0.1)
    assert s.commands()[0] == SendStreamData(0, hello())
    assert of(s.events(), MessageAvailable)


@pytest.mark.spec("zero-rtt.server")
def test_replay_safe_server_processes_0rtt_at_once() -> None:
    s = Engine(Side.SERVER, config=EngineConfig(replay_safe_0rtt=True))
    s.handle_event(StreamDataReceived(0, hello()), 0.0)
    assert s.commands()[0] == SendStreamData(0, hello())


@pytest.mark.spec("startup.server")
def test_held_bytes_are_bounded() -> None:
    s = Engine(Side.SERVER, config=EngineConfig(max_buffered_bytes=100))
    feed(s, 2, [Version(), Message(0, 0, (), b"x" * 200)])
    assert close_code(s.commands()) == CloseCode.LIMIT_EXCEEDED


@pytest.mark.spec("startup.server")
def test_headers_reach_both_applications() -> None:
    sim = Simulation(
        Engine(Side.CLIENT, headers=[("a", b"1")]), Engine(Side.SERVER, headers=[("b", b"2")]), NetConfig(), seed=3
    )
    sim.run_until_idle()
    assert sim.client.events[0] == HeadersReceived((("b", b"2"),))
    ev = sim.server.events[0]
    assert isinstance(ev, HeadersReceived) and ev.headers == (("a", b"1"),) and ev.entrypoint is not None
    assert sim.client.engine.peer_headers == (("b", b"2"),)


@pytest.mark.spec("startup.control-stream")
def test_connection_control_stream_is_never_finished_or_reset() -> None:
    sim = pair()
    sim.trace = []
    c, s = sim.client.engine, sim.server.engine
    c.send(c.entrypoint or 0, b"x", now=sim.now)
    c.finish(c.entrypoint or 0, now=sim.now)
    sim.run_until_idle()
    s.drop_receiver(s.entrypoint or 0, now=sim.now)
    c.drop_sender(c.entrypoint or 0, now=sim.now)
    sim.run_until_idle()
    lines = [line for line in sim.trace if "stream_id=0," in line]
    assert not [line for line in lines if "end_stream=True" in line or "Reset" in line]
    assert c.state_sizes()["streams"] == 1 and s.state_sizes()["streams"] == 1


@pytest.mark.spec("startup.client")
def test_client_prefixes_version_on_a_server_opened_stream_before_the_server_headers() -> None:
    c = Engine(Side.CLIENT)
    c.commands()
    c.send(c.entrypoint or 0, b"u", delivery=Delivery.UNRELIABLE)
    feed(c, 1, [ChannelControl(0)])  # the server's control stream overtook its headers
    assert written(c.commands(), 1) == [Version(), SentUnreliable(1)]

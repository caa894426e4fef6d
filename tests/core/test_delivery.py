"""The three delivery modes, oneshot channels, and send-side limits."""

from __future__ import annotations

import pytest
from core_helpers import client_ready, datagrams, of, pair, written

from aqueduct.core.app import AttachKind, Delivery, MessagesAcked, ReceiverEnded, SenderEnded
from aqueduct.core.config import EngineConfig
from aqueduct.core.transport import SendStreamData
from aqueduct.errors import ChannelClosed, EndReason, LimitExceeded
from aqueduct.wire.frames import Message


def _drain(engine, receiver):  # type: ignore[no-untyped-def]
    out = []
    while (m := engine.take_message(receiver)) is not None:
        out.append(m)
    return out


@pytest.mark.spec("send.message")
def test_ordered_messages_share_one_uni_stream_back_to_back_and_fin_on_finish() -> None:
    c = client_ready()
    ep = c.entrypoint or 0
    sids = {c.send(ep, bytes([i])).stream_id for i in range(3)}
    assert len(sids) == 1
    sid = sids.pop()
    assert sid is not None and sid & 3 == 2  # client-opened uni stream
    cmds = c.commands()
    assert written(cmds, sid) == [Message(0, i, (), bytes([i])) for i in range(3)]
    c.finish(ep)
    assert SendStreamData(sid, b"", True) in c.commands()


@pytest.mark.spec("send.message")
def test_ordered_delivery_end_to_end_in_order() -> None:
    sim = pair()
    c, s = sim.client.engine, sim.server.engine
    for i in range(20):
        c.send(c.entrypoint or 0, b"m%d" % i, now=sim.now)
    c.finish(c.entrypoint or 0, now=sim.now)
    sim.run_until_idle()
    assert [m.payload for m in _drain(s, s.entrypoint)] == [b"m%d" % i for i in range(20)]
    assert ReceiverEnded(s.entrypoint or 0, EndReason.FINISHED) in sim.server.events
    assert SenderEnded(c.entrypoint or 0, EndReason.FINISHED) in sim.client.events


@pytest.mark.spec("send.message")
def test_unordered_messages_each_get_their_own_finished_stream() -> None:
    c = client_ready()
    ep = c.entrypoint or 0
    sids = [c.send(ep, b"x", delivery=Delivery.UNORDERED).stream_id for _ in range(3)]
    assert len(set(sids)) == 3
    cmds = c.commands()
    for n, sid in enumerate(sids):
        assert sid is not None
        assert written(cmds, sid) == [Message(0, n, (), b"x")]
        assert [x.end_stream for x in cmds if isinstance(x, SendStreamData) and x.stream_id == sid] == [True]


@pytest.mark.spec("send.message")
def test_unreliable_messages_are_datagrams_with_their_own_numbers() -> None:
    c = client_ready()
    ep = c.entrypoint or 0
    r0 = c.send(ep, b"r0")
    u0 = c.send(ep, b"u0", delivery=Delivery.UNRELIABLE)
    r1 = c.send(ep, b"r1", delivery=Delivery.UNORDERED)
    u1 = c.send(ep, b"u1", delivery=Delivery.UNRELIABLE)
    assert (r0.number, u0.number, r1.number, u1.number) == (0, 0, 1, 1)
    assert u0.stream_id is None and u1.stream_id is None
    assert datagrams(c.commands()) == [[Message(0, 0, (), b"u0")], [Message(0, 1, (), b"u1")]]


@pytest.mark.spec("send.message")
def test_every_mode_end_to_end() -> None:
    sim = pair()
    c, s = sim.client.engine, sim.server.engine
    ep = c.entrypoint or 0
    for mode in Delivery:
        c.send(ep, mode.value.encode(), delivery=mode, now=sim.now)
    sim.run_until_idle()
    got = {m.payload: m.delivery for m in _drain(s, s.entrypoint)}
    assert got == {b"ordered": Delivery.ORDERED, b"unordered": Delivery.ORDERED, b"unreliable": Delivery.UNRELIABLE}
    acked = of(sim.client.events, MessagesAcked)
    assert {(e.reliable, e.first, e.stop) for e in acked} >= {(False, 0, 1)}
    assert sum(e.stop - e.first for e in acked if e.reliable) == 2


@pytest.mark.spec("send.message")
def test_oneshot_channel_carries_one_message_then_finishes() -> None:
    sim = pair()
    c, s = sim.client.engine, sim.server.engine
    res = c.send(c.entrypoint or 0, b"here is a reply channel", [AttachKind.ONESHOT_RECEIVER], now=sim.now)
    (tx,) = res.created
    c.send(tx, b"the one", now=sim.now)
    with pytest.raises(ChannelClosed):
        c.send(tx, b"a second", now=sim.now)
    sim.run_until_idle()
    outer = s.take_message(s.entrypoint or 0)
    assert outer is not None and outer.attachments[0].channel.oneshot
    rx = outer.attachments[0].handle
    assert [m.payload for m in _drain(s, rx)] == [b"the one"]
    sim.run_until_idle()
    assert s.receiver_status(rx) is EndReason.FINISHED
    assert SenderEnded(tx, EndReason.FINISHED) in sim.client.events


def test_oversize_unreliable_payload_is_refused_before_sending() -> None:
    c = client_ready(EngineConfig(max_datagram_payload=100))
    c.commands()
    with pytest.raises(LimitExceeded):
        c.send(c.entrypoint or 0, b"x" * 95, [AttachKind.SENDER], delivery=Delivery.UNRELIABLE)
    assert c.commands() == []
    assert c.state_sizes()["receivers"] == 0  # no half was created either
    c.send(c.entrypoint or 0, b"x" * 80, delivery=Delivery.UNRELIABLE)
    assert len(datagrams(c.commands())) == 1


def test_payload_over_frame_limit_and_channel_limit_are_refused() -> None:
    c = client_ready(EngineConfig(max_frame_size=1000, max_channels=3))
    with pytest.raises(LimitExceeded):
        c.send(c.entrypoint or 0, b"x" * 1001)
    with pytest.raises(LimitExceeded):
        c.send(c.entrypoint or 0, b"x", [AttachKind.SENDER] * 3)
    c.send(c.entrypoint or 0, b"x", [AttachKind.SENDER] * 2)


def test_send_result_names_the_stream_for_backpressure() -> None:
    c = client_ready()
    res = c.send(c.entrypoint or 0, b"x")
    assert res.stream_id in {x.stream_id for x in c.commands() if isinstance(x, SendStreamData)}

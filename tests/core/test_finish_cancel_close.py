"""Finish, cancel and close, on both halves."""

from __future__ import annotations

import pytest
from core_helpers import client_ready, feed, of, pair, resets, server_ready, written

from aqueduct.core.app import (
    AttachKind,
    Delivery,
    MessagesAcked,
    MessagesNacked,
    ReceiverEnded,
    SenderEnded,
)
from aqueduct.core.transport import DatagramReceived, SendStreamData, StreamReset
from aqueduct.errors import EndReason, ResetCode
from aqueduct.wire.channel_id import ChannelId, Side
from aqueduct.wire.frames import (
    AckNackUnreliable,
    ChannelControl,
    CloseReceiver,
    FinishSender,
    Message,
    SentUnreliable,
    encode_frames,
)


def _numbers(events, kind, reliable):  # type: ignore[no-untyped-def]
    return sorted(n for e in of(events, kind) if e.reliable == reliable for n in range(e.first, e.stop))


@pytest.mark.spec("finish.sender")
def test_finish_declares_pending_unreliable_then_finish_sender_then_fin() -> None:
    c = client_ready()
    c.send(1, b"r")
    c.send(1, b"u", delivery=Delivery.UNRELIABLE)
    c.send(1, b"u", delivery=Delivery.UNRELIABLE)
    c.finish(1)
    assert written(c.commands(), 1) == []  # waits for the control stream
    feed(c, 1, [ChannelControl(0)])
    cmds = c.commands()
    assert written(cmds, 1) == [SentUnreliable(2), FinishSender(1)]
    ends = [x.end_stream for x in cmds if isinstance(x, SendStreamData) and x.stream_id == 1]
    assert ends[-1] is True


@pytest.mark.spec("finish.receiver")
def test_finishing_receiver_waits_the_nack_timeout_for_missing_unreliable() -> None:
    sim = pair()
    c, s = sim.client.engine, sim.server.engine
    ep = c.entrypoint or 0
    sim.drop_next_datagram(c.side)
    c.send(ep, b"lost", delivery=Delivery.UNRELIABLE, now=sim.now)
    c.send(ep, b"kept", delivery=Delivery.UNRELIABLE, now=sim.now)
    c.finish(ep, now=sim.now)
    t0 = sim.now
    sim.run_until_idle()
    (ended_at,) = [t for t, e in sim.server.log if isinstance(e, ReceiverEnded)]
    assert ended_at >= t0 + 1.0  # not nacked merely because the sender finished
    assert _numbers(sim.client.events, MessagesNacked, False) == [0]
    assert _numbers(sim.client.events, MessagesAcked, False) == [1]
    assert sim.client.events[-1] == SenderEnded(ep, EndReason.FINISHED)
    assert [m.payload for m in [s.take_message(s.entrypoint or 0)] if m] == [b"kept"]


@pytest.mark.spec("finish.receiver")
def test_after_finished_the_queue_stays_takeable() -> None:
    sim = pair()
    c, s = sim.client.engine, sim.server.engine
    for i in range(3):
        c.send(c.entrypoint or 0, bytes([i]), now=sim.now)
    c.finish(c.entrypoint or 0, now=sim.now)
    sim.run_until_idle()
    rx = s.entrypoint or 0
    assert s.receiver_status(rx) is EndReason.FINISHED
    assert [s.take_message(rx).payload for _ in range(3)] == [b"\0", b"\1", b"\2"]  # type: ignore[union-attr]
    assert s.take_message(rx) is None


@pytest.mark.spec("cancel")
def test_cancel_resets_streams_and_the_receiver_discards_queued_messages() -> None:
    sim = pair()
    c, s = sim.client.engine, sim.server.engine
    ep = c.entrypoint or 0
    for _ in range(3):
        c.send(ep, b"queued", now=sim.now)
    sim.run_until_idle()
    sim.trace = []
    c.cancel(ep, now=sim.now)
    sim.run_until_idle()
    assert any("ResetStream" in line and "CANCELLED" in line for line in sim.trace)
    rx = s.entrypoint or 0
    assert ReceiverEnded(rx, EndReason.CANCELLED) in sim.server.events
    assert s.take_message(rx) is None
    assert SenderEnded(ep, EndReason.CLOSED) in sim.client.events
    assert _numbers(sim.client.events, MessagesAcked, True) == [0, 1, 2]


@pytest.mark.spec("cancel")
def test_cancel_before_the_control_stream_resets_message_streams_at_once() -> None:
    c = client_ready()
    sid = c.send(1, b"x").stream_id
    c.commands()
    c.cancel(1)
    assert resets(c.commands()) == {sid: ResetCode.CANCELLED}
    feed(c, 1, [ChannelControl(0)])
    assert resets(c.commands()) == {1: ResetCode.CANCELLED}


@pytest.mark.spec("close.receiver")
def test_receiver_may_close_any_time_and_the_sender_nacks_the_unaccounted() -> None:
    sim = pair()
    c, s = sim.client.engine, sim.server.engine
    ep = c.entrypoint or 0
    c.send(ep, b"a", now=sim.now)
    sim.run_until_idle()
    s.close_receiver(s.entrypoint or 0, now=sim.now)
    for _ in range(3):
        c.send(ep, b"late", now=sim.now)
        c.send(ep, b"late", delivery=Delivery.UNRELIABLE, now=sim.now)
    sim.run_until_idle()
    assert SenderEnded(ep, EndReason.RECEIVER_DROPPED) in sim.client.events
    assert ReceiverEnded(s.entrypoint or 0, EndReason.CLOSED) in sim.server.events
    rel = _numbers(sim.client.events, MessagesAcked, True) + _numbers(sim.client.events, MessagesNacked, True)
    assert sorted(rel) == [0, 1, 2, 3]
    assert _numbers(sim.client.events, MessagesNacked, False) == [0, 1, 2]


@pytest.mark.spec("close.receiver")
def test_close_receiver_ranges_start_at_the_ack_reliable_start() -> None:
    s = server_ready()
    feed(s, 2, [Message(0, 0), Message(0, 1)])
    s.handle_timer(1.0)
    s.commands()
    feed(s, 6, [Message(0, 3)])
    s.handle_event(DatagramReceived(encode_frames([Message(0, 0)])), 1.0)
    s.close_receiver(s.entrypoint or 0)
    cmds = s.commands()
    assert written(cmds, 1) == [AckNackUnreliable((1,)), CloseReceiver((0, 1, 1))]  # from 2: #2 missing, #3 acked
    assert [x.end_stream for x in cmds if isinstance(x, SendStreamData) and x.stream_id == 1][-1]


@pytest.mark.spec("cancel")
def test_drop_sender_cancels_unless_finished() -> None:
    c = client_ready()
    feed(c, 1, [ChannelControl(0)])
    c.commands()
    c.drop_sender(1)
    assert resets(c.commands()) == {1: ResetCode.CANCELLED}
    c2 = client_ready()
    feed(c2, 1, [ChannelControl(0)])
    c2.finish(1)
    c2.drop_sender(1)
    assert resets(c2.commands()) == {}


@pytest.mark.spec("close.receiver")
def test_drop_receiver_closes_it() -> None:
    s = server_ready()
    feed(s, 2, [Message(0, 0)])
    s.drop_receiver(s.entrypoint or 0)
    assert written(s.commands(), 1)[-1] == CloseReceiver((1,))
    assert s.state_sizes()["receivers"] == 0


@pytest.mark.spec("reset-codes", "cancel")
def test_cancelled_reset_from_the_sender_closes_the_receiver() -> None:
    s = server_ready()
    feed(s, 2, [Message(0, 0)])
    s.handle_event(StreamReset(1, ResetCode.CANCELLED), 0.0)
    assert written(s.commands(), 1)[-1] == CloseReceiver((1,))
    assert ReceiverEnded(s.entrypoint or 0, EndReason.CANCELLED) in s.events()
    assert s.take_message(s.entrypoint or 0) is None


@pytest.mark.spec("reset-codes", "lost-reset")
def test_lost_reset_from_the_sender_ends_the_receiver_without_close() -> None:
    s = server_ready()
    feed(s, 2, [Message(0, 0)])
    s.handle_event(StreamReset(1, ResetCode.LOST), 0.0)
    cmds = s.commands()
    assert resets(cmds) == {1: ResetCode.LOST}
    assert all(not isinstance(f, CloseReceiver) for f in written(cmds, 1))
    assert ReceiverEnded(s.entrypoint or 0, EndReason.LOST) in s.events()
    assert s.take_message(s.entrypoint or 0) is None


@pytest.mark.spec("control-stream.open")
def test_minting_side_acknowledges_attach_and_the_opener_defers_its_reset_until_then() -> None:
    s = server_ready()
    given = ChannelId.make(to=Side.CLIENT, minted_by=Side.CLIENT, oneshot=False, index=0)
    feed(s, 2, [Message(0, 0, (given,), b"here is a sender")])
    s.commands()
    tx = s.take_message(s.entrypoint or 0).attachments[0].handle  # type: ignore[union-attr]
    ctrl = 5  # the server opened it with ChannelControl
    s.cancel(tx)
    assert resets(s.commands()) == {}  # the client may not have read the ChannelControl yet
    feed(s, ctrl, [AckNackUnreliable(())])  # the client's attach acknowledgement
    assert resets(s.commands()) == {ctrl: ResetCode.CANCELLED}
    c = client_ready()
    c.send(1, b"x", [AttachKind.SENDER])
    c.commands()
    feed(c, 5, [ChannelControl(given)])
    assert written(c.commands(), 5) == [AckNackUnreliable(())]


@pytest.mark.spec("control-stream.open")
def test_a_fresh_oneshot_reply_closes_without_an_empty_first_frame() -> None:
    """The request/reply exchange: the reply's ChannelControl, FinishSender and Message arrive in one input; the
    receiver's CloseReceiver is its first frame (it tells the server as much as an empty AckNackUnreliable
    would), so the client writes one frame, not two (decision PERF-23)."""
    c = client_ready()
    (rx,) = c.send(1, b"ask", [AttachKind.ONESHOT_SENDER]).created
    c.commands()
    reply = ChannelId(c.channel_of(rx) or 0)
    feed(c, 5, [ChannelControl(reply), FinishSender(1)], end=True)
    feed(c, 7, [Message(reply, 0, (), b"answer")], end=True)
    assert written(c.commands(), 5) == [CloseReceiver((1,))]
    assert c.take_message(rx) is not None


@pytest.mark.spec("control-stream.open")
def test_the_entrypoint_sender_writes_no_first_frame_on_attach() -> None:
    """The server never resets the entrypoint's control stream while the client's direction is open (its
    receiver is never lost), so nothing waits for the client's attach acknowledgement there: no
    SentUnreliable(0) at connect."""
    c = client_ready()
    feed(c, 1, [ChannelControl(0)])
    assert written(c.commands(), 1) == []
    c.send(1, b"u", delivery=Delivery.UNRELIABLE)
    c.finish(1)
    assert written(c.commands(), 1) == [SentUnreliable(1), FinishSender(0)]


@pytest.mark.spec("finish.receiver")
def test_a_finished_receiver_keeps_its_queue_when_the_connection_then_closes() -> None:
    """The spec: a receiver closed by the sender finishing lets the application receive every message acked
    before it closed, then the finish. A client's graceful close is FinishSender, the server's CloseReceiver
    (acking them all), then CONNECTION_CLOSE: the messages the server application had not taken yet must
    survive the connection's end (they were dropped with it: a clean end after losing them)."""
    from aqueduct.core.transport import ConnectionTerminated

    s = server_ready()
    ep = s.entrypoint or 0
    feed(s, 2, [Message(0, n, (), b"m%d" % n) for n in range(3)])
    feed(s, 1, [FinishSender(3)], end=True)
    assert written(s.commands(), 1)[-1] == CloseReceiver((3,))
    s.handle_event(ConnectionTerminated(0, "bye"), 0.0)
    assert [d.payload for d in s.take_many(ep, 10)] == [b"m0", b"m1", b"m2"]
    assert s.take_message(ep) is None and s.receiver_status(ep) is EndReason.FINISHED
    assert not [c for c in s.commands() if not isinstance(c, SendStreamData)]  # no credit for a closed connection


@pytest.mark.spec("finish.receiver")
def test_a_receiver_the_connection_ends_drops_its_queue() -> None:
    """A receiver still open when the connection ends is lost with it (CONNECTION_LOST): nothing to take."""
    from aqueduct.core.transport import ConnectionTerminated

    s = server_ready()
    ep = s.entrypoint or 0
    feed(s, 2, [Message(0, 0, (), b"m0")])
    s.handle_event(ConnectionTerminated(0, "bye"), 0.0)
    assert s.take_message(ep) is None and s.receiver_status(ep) is EndReason.CONNECTION_LOST

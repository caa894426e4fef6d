"""The application side: events, status, and misuse raising the aqueduct.errors types."""

from __future__ import annotations

import pytest
from core_helpers import client_ready, feed, of, pair, server_ready

from aqueduct.core.app import AttachKind, Delivery, MessageAvailable, ReceiverEnded, SenderEnded
from aqueduct.core.transport import StreamReset
from aqueduct.errors import ChannelClosed, ChannelLost, ConnectionLost, EndReason, ReceiverDropped, ResetCode
from aqueduct.wire.frames import ChannelControl, CloseReceiver, Message


def test_message_available_fires_when_the_queue_goes_from_empty_to_non_empty() -> None:
    s = server_ready()
    rx = s.entrypoint or 0
    feed(s, 2, [Message(0, 0), Message(0, 1)])
    assert of(s.events(), MessageAvailable) == [MessageAvailable(rx)]
    s.take_message(rx)
    feed(s, 2, [Message(0, 2)])
    assert of(s.events(), MessageAvailable) == []  # the queue was not empty
    s.take_message(rx)
    s.take_message(rx)
    feed(s, 2, [Message(0, 3)])
    assert of(s.events(), MessageAvailable) == [MessageAvailable(rx)]


def test_status_is_none_while_alive_then_the_end_reason() -> None:
    c = client_ready()
    assert c.sender_status(1) is None
    feed(c, 1, [ChannelControl(0), CloseReceiver(())])
    assert c.sender_status(1) is EndReason.RECEIVER_DROPPED
    assert of(c.events(), SenderEnded) == [SenderEnded(1, EndReason.RECEIVER_DROPPED)]
    with pytest.raises(ReceiverDropped):
        c.send(1, b"x")


@pytest.mark.spec("lost-reset")
def test_send_on_a_lost_sender_raises_channel_lost() -> None:
    c = client_ready()
    feed(c, 1, [ChannelControl(0)])
    c.handle_event(StreamReset(1, ResetCode.LOST), 0.0)
    with pytest.raises(ChannelLost):
        c.send(1, b"x")


def test_unknown_or_dropped_handles_raise_channel_closed() -> None:
    c = client_ready()
    with pytest.raises(ChannelClosed):
        c.send(99, b"x")
    rx = c.send(1, b"x", [AttachKind.SENDER]).created[0]
    c.drop_receiver(rx)
    with pytest.raises(ChannelClosed):
        c.take_message(rx)
    with pytest.raises(ChannelClosed):
        c.receiver_status(12345)


def test_after_the_connection_closes_sends_raise_connection_lost() -> None:
    sim = pair()
    c = sim.client.engine
    c.close(0, "bye", now=sim.now)
    sim.run_until_idle()
    with pytest.raises(ConnectionLost):
        c.send(c.entrypoint or 0, b"x")
    assert c.sender_status(c.entrypoint or 0) is EndReason.CONNECTION_LOST
    s = sim.server.engine
    assert ReceiverEnded(s.entrypoint or 0, EndReason.CONNECTION_LOST) in sim.server.events
    c.drop_sender(c.entrypoint or 0)
    assert c.state_sizes()["senders"] == 0


@pytest.mark.spec("receive.attachments")
def test_halves_inside_a_queued_message_surface_when_it_is_taken() -> None:
    sim = pair()
    c, s = sim.client.engine, sim.server.engine
    rx_c, tx_c = c.send(c.entrypoint or 0, b"outer", [AttachKind.SENDER, AttachKind.RECEIVER], now=sim.now).created
    c.send(tx_c, b"inner", now=sim.now)
    c.finish(tx_c, now=sim.now)
    sim.run_until_idle()
    before = sim.server.take_events()
    named = {getattr(e, "receiver", None) for e in before} | {getattr(e, "sender", None) for e in before}
    assert named <= {None, s.entrypoint}  # nothing about halves the application has not got yet
    outer = s.take_message(s.entrypoint or 0)
    assert outer is not None
    rx_s = outer.attachments[1].handle
    sim.pump()
    new = sim.server.take_events()
    assert MessageAvailable(rx_s) in new and ReceiverEnded(rx_s, EndReason.FINISHED) in new
    assert s.take_message(rx_s).payload == b"inner"  # type: ignore[union-attr]
    assert rx_c != tx_c


@pytest.mark.spec("finish.sender")
def test_send_or_finish_after_a_finished_end_raises_channel_closed() -> None:
    c = client_ready()
    feed(c, 1, [ChannelControl(0)])
    c.finish(1)
    feed(c, 1, [CloseReceiver(())], end=True)
    assert c.sender_status(1) is EndReason.FINISHED
    with pytest.raises(ChannelClosed):
        c.send(1, b"x")
    c.finish(1)  # already finished: a no-op


def test_take_many_returns_what_repeated_take_message_would() -> None:
    a, b = server_ready(), server_ready()
    rx = a.entrypoint or 0
    for s in (a, b):
        feed(s, 2, [Message(0, n, payload=bytes([n])) for n in range(5)])
    singles = [b.take_message(rx) for _ in range(3)]
    assert a.take_many(rx, 3) == singles
    assert a.take_many(rx, 10) == [b.take_message(rx), b.take_message(rx)]
    assert a.take_many(rx, 10) == [] and b.take_message(rx) is None
    assert a.commands() == b.commands()


def test_a_batch_of_one_writes_what_send_writes() -> None:
    a, b = client_ready(), client_ready()
    for delivery in (Delivery.ORDERED, Delivery.UNORDERED, Delivery.UNRELIABLE):
        assert a.send_many(1, [b"hello"], delivery) == b.send(1, b"hello", (), delivery).stream_id
    assert a.commands() == b.commands()
    feed(a, 1, [ChannelControl(0), CloseReceiver(())])
    with pytest.raises(ReceiverDropped):
        a.send_many(1, [b"x"])

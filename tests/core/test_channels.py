"""Channels made by attachments: control streams, early messages, ghosts, refusals, filters, limits."""

from __future__ import annotations

import pytest
from core_helpers import client_ready, close_code, feed, of, pair, resets, server_ready, written

from aqueduct.core.app import AttachKind, Delivery, MessageAvailable, MessagesAcked, MessagesNacked, SenderEnded
from aqueduct.core.config import EngineConfig
from aqueduct.core.transport import DatagramReceived, GrantCredit, StreamDataReceived, StreamReset
from aqueduct.errors import EndReason, ResetCode
from aqueduct.wire.channel_id import ChannelId, Side
from aqueduct.wire.errors import CloseCode
from aqueduct.wire.frames import ChannelControl, Message, encode_frames


@pytest.mark.spec("send.attachments", "control-stream.open")
def test_attachments_create_both_halves_and_the_non_minting_side_opens_control_streams() -> None:
    sim = pair()
    sim.trace = []
    c, s = sim.client.engine, sim.server.engine
    rx_c, tx_c = c.send(c.entrypoint or 0, b"two channels", [AttachKind.SENDER, AttachKind.RECEIVER]).created
    sim.run_until_idle()
    outer = s.take_message(s.entrypoint or 0)
    assert outer is not None
    tx_s, rx_s = outer.attachments
    assert (tx_s.index, tx_s.is_sender, rx_s.index, rx_s.is_sender) == (0, True, 1, False)
    assert tx_s.channel.minted_by is Side.CLIENT and tx_s.channel.to is Side.CLIENT
    s.send(tx_s.handle, b"to client", now=sim.now)
    c.send(tx_c, b"to server", now=sim.now)
    sim.run_until_idle()
    assert c.take_message(rx_c).payload == b"to client"  # type: ignore[union-attr]
    assert s.take_message(rx_s.handle).payload == b"to server"  # type: ignore[union-attr]
    client_bidi = [sid for sid in sim.streams(Side.CLIENT) if sid & 3 == 0]
    assert client_bidi == [0]  # only the server opened channel control streams
    assert sum("data=b'\\x02" in line and "S SendStreamData" in line for line in sim.trace) == 2


@pytest.mark.spec("receive.routing")
def test_a_message_that_arrives_before_the_message_creating_its_channel() -> None:
    sim = pair()
    c, s = sim.client.engine, sim.server.engine
    res = c.send(c.entrypoint or 0, b"outer", [AttachKind.RECEIVER], now=sim.now)
    assert res.stream_id is not None
    sim.hold_stream(Side.CLIENT, res.stream_id)
    (tx,) = res.created
    c.send(tx, b"early", now=sim.now)
    sim.run_until_idle()
    assert s.state_sizes()["pending_receivers"] == 1
    assert not [e for e in sim.server.events if isinstance(e, MessageAvailable) and e.receiver != s.entrypoint]
    assert not [e for e in sim.client.events if isinstance(e, MessagesAcked) and e.sender == tx]  # not reachable yet
    sim.release_stream(Side.CLIENT, res.stream_id)
    sim.run_until_idle()
    outer = s.take_message(s.entrypoint or 0)
    assert outer is not None
    (att,) = outer.attachments
    assert s.take_message(att.handle).payload == b"early"  # type: ignore[union-attr]
    assert s.state_sizes()["pending_receivers"] == 0
    assert MessagesAcked(tx, True, 0, 1) in sim.client.events  # reported once the creator was acked


def _ghost_run(filter_size: int):  # type: ignore[no-untyped-def]
    sim = pair(server=EngineConfig(discarded_filter_size=filter_size))
    c, s = sim.client.engine, sim.server.engine
    (tx,) = c.send(c.entrypoint or 0, b"outer", [AttachKind.RECEIVER], now=sim.now).created
    sim.run_until_idle()
    outer = s.take_message(s.entrypoint or 0)
    assert outer is not None
    rx = outer.attachments[0].handle
    sim.delay_next_datagram(Side.CLIENT, 5.0)
    c.send(tx, b"very late", delivery=Delivery.UNRELIABLE, now=sim.now)
    c.finish(tx, now=sim.now)
    sim.run_until(lambda: s.receiver_status(rx) is EndReason.FINISHED)
    assert s.take_message(rx) is None
    s.drop_receiver(rx, now=sim.now)
    sim.trace = []
    sim.run_until_idle()
    assert MessagesNacked(tx, False, 0, 1) in sim.client.events
    return sim


@pytest.mark.spec("control-stream.ghost")
def test_a_ghost_receiver_is_created_by_a_late_message_and_reset_lost() -> None:
    s = server_ready(EngineConfig(discarded_filter_size=0))
    never_claimed = ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=4)
    feed(s, 2, [Message(never_claimed, 0, (), b"early")])  # auto-created; its creating message was lost
    s.handle_event(StreamReset(5, ResetCode.LOST), 0.0)  # the client refuses it: the receiver is lost
    s.commands()
    assert s.state_sizes()["pending_receivers"] == 0
    feed(s, 6, [Message(never_claimed, 1, (), b"late")])  # a late message makes a ghost
    assert written(s.commands(), 9) == [ChannelControl(never_claimed)]
    assert s.state_sizes()["pending_receivers"] == 1
    s.handle_event(StreamReset(9, ResetCode.LOST), 0.0)  # ...which the client resets 'lost' too
    assert resets(s.commands()) == {9: ResetCode.LOST}
    assert s.state_sizes()["pending_receivers"] == 0 and s.state_sizes()["receivers"] == 1
    assert not of(s.events(), MessageAvailable)


@pytest.mark.spec("receive.discarded")
@pytest.mark.parametrize("filter_size", [0, 16])
def test_late_messages_for_a_closed_channel_make_no_ghost(filter_size: int) -> None:
    sim = _ghost_run(filter_size=filter_size)
    assert not any("S SendStreamData" in line and "data=b'\\x02" in line for line in sim.trace)
    assert sim.server.engine.state_sizes()["pending_receivers"] == 0


@pytest.mark.spec("control-stream.ghost")
def test_channel_control_for_an_unknown_channel_is_reset_lost() -> None:
    c = client_ready()
    unknown = ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=9)
    feed(c, 5, [ChannelControl(unknown)])
    assert resets(c.commands()) == {5: ResetCode.LOST}
    assert not c.closed


@pytest.mark.spec("control-stream.ghost")
def test_channel_control_for_a_sender_that_already_has_one_is_reset_lost() -> None:
    c = client_ready()
    feed(c, 1, [ChannelControl(0)])
    feed(c, 5, [ChannelControl(0)])
    assert resets(c.commands()) == {5: ResetCode.LOST}
    assert not of(c.events(), SenderEnded)
    c.send(c.entrypoint or 0, b"still fine", delivery=Delivery.UNRELIABLE, now=0.0)
    c.handle_timer(1.0)
    assert written(c.commands(), 1)  # SentUnreliable on the first control stream


@pytest.mark.spec("receive.routing")
def test_a_refused_auto_created_receiver_ends_and_is_forgotten() -> None:
    s = server_ready()
    other = ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=4)
    feed(s, 2, [Message(other, 0, (), b"x")])
    assert s.state_sizes()["pending_receivers"] == 1
    ctrl = 5  # the server's next bidi stream after the entrypoint's
    assert written(s.commands(), ctrl) == [ChannelControl(other)]
    s.handle_event(StreamReset(ctrl, ResetCode.LOST), 0.0)
    assert resets(s.commands()) == {ctrl: ResetCode.LOST}
    sizes = s.state_sizes()
    assert sizes["pending_receivers"] == 0 and sizes["receivers"] == 1 and sizes["streams"] == 3  # 0, 1, uni 2


@pytest.mark.spec("receive.routing")
def test_messages_for_unknown_channels_we_minted_are_dropped_with_their_credit() -> None:
    s = server_ready()
    ours = ChannelId.make(to=Side.SERVER, minted_by=Side.SERVER, oneshot=False, index=3)
    data = encode_frames([Message(ours, 0, (), b"stray")])
    s.handle_event(StreamDataReceived(2, data), 0.0)
    assert s.commands() == [GrantCredit(2, len(data))]
    assert s.events() == []


@pytest.mark.spec("receive.routing")
def test_auto_created_receivers_are_bounded() -> None:
    s = server_ready(EngineConfig(max_pending_receivers=2))
    ids = [ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=i) for i in (1, 2, 3)]
    feed(s, 2, [Message(i, 0) for i in ids])
    assert close_code(s.commands()) == CloseCode.LIMIT_EXCEEDED


def test_a_full_receiver_queue_stalls_its_stream_until_the_application_takes() -> None:
    s = server_ready(EngineConfig(max_receiver_queue_messages=2))
    rx = s.entrypoint or 0
    frames = [Message(0, n, (), b"m%d" % n) for n in range(4)]
    data = encode_frames(frames)
    s.handle_event(StreamDataReceived(2, data, True), 0.0)
    assert not s.closed
    one = len(encode_frames(frames[:1]))
    assert s.commands() == []  # no credit: the two queued are untaken, the rest unprocessed
    assert s.state_sizes()["stalled_streams"] == 1 and s.state_sizes()["held_bytes"] == 2 * one
    assert s.take_message(rx).payload == b"m0"  # type: ignore[union-attr]
    assert s.take_message(rx).payload == b"m1"  # type: ignore[union-attr]
    assert [m.payload for m in iter(lambda: s.take_message(rx), None)] == [b"m2", b"m3"]  # type: ignore[union-attr]
    assert sum(c.nbytes for c in s.commands() if isinstance(c, GrantCredit)) == len(data)
    sizes = s.state_sizes()
    assert sizes["stalled_streams"] == 0 and sizes["held_bytes"] == 0 and sizes["streams"] == 2  # FIN ran too


def test_halves_carried_by_queued_messages_are_bounded_and_the_rest_stall_unprocessed() -> None:
    """Each attached half becomes a channel on arrival (decision SEC-30): past max_receiver_queue_halves the
    stream stalls before the next message is processed (no channel made for it), and runs on once taken."""
    s = server_ready(EngineConfig(max_receiver_queue_halves=3))
    rx = s.entrypoint or 0
    ids = [ChannelId.make(to=Side.CLIENT, minted_by=Side.CLIENT, oneshot=True, index=i) for i in range(1, 6)]
    frames = [Message(0, 0, (ids[0], ids[1]), b"two"), Message(0, 1, (ids[2],), b"one"),
              Message(0, 2, (ids[3], ids[4]), b"two more")]
    s.handle_event(StreamDataReceived(2, encode_frames(frames), True), 0.0)
    assert not s.closed
    sizes = s.state_sizes()
    assert sizes["queued_halves"] == 3 and sizes["senders"] == 3 and sizes["stalled_streams"] == 1
    assert s.take_message(rx).payload == b"two"  # type: ignore[union-attr]
    sizes = s.state_sizes()  # (one queued half left: the stalled message's two fit now)
    assert sizes["queued_halves"] == 3 and sizes["senders"] == 5 and sizes["stalled_streams"] == 0
    assert [m.payload for m in iter(lambda: s.take_message(rx), None)] == [b"one", b"two more"]  # type: ignore[union-attr]
    assert s.state_sizes()["queued_halves"] == 0


def test_a_message_larger_than_a_whole_queue_closes_with_limit_exceeded() -> None:
    s = server_ready(EngineConfig(max_receiver_queue_bytes=10))
    feed(s, 2, [Message(0, 0, (), b"x" * 11)])
    assert close_code(s.commands()) == CloseCode.LIMIT_EXCEEDED


@pytest.mark.spec("acks.unreliable")
def test_unreliable_messages_over_the_queue_bound_are_dropped_then_nacked() -> None:
    s = server_ready(EngineConfig(max_receiver_queue_messages=1))
    for n in range(2):
        s.handle_event(DatagramReceived(encode_frames([Message(0, n)])), 0.0)
    assert not s.closed
    rx = s.entrypoint or 0
    assert s.take_message(rx) is not None and s.take_message(rx) is None



@pytest.mark.spec("stream-reset.partial")
def test_a_bidi_stream_reset_before_its_channel_control_is_read_leaves_nothing_behind() -> None:
    s = server_ready()
    before = s.state_sizes()["streams"]
    s.handle_event(StreamDataReceived(4, b"\x02"), 0.0)  # half a ChannelControl
    s.handle_event(StreamReset(4, ResetCode.CANCELLED), 0.0)
    assert resets(s.commands()) == {4: ResetCode.LOST}
    assert s.state_sizes()["streams"] == before and s.state_sizes()["held_bytes"] == 0


@pytest.mark.spec("receive.discarded")
def test_a_late_message_for_a_channel_whose_receiver_was_handed_out_makes_no_ghost() -> None:
    s = server_ready()
    given = ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=3)
    feed(s, 2, [Message(0, 0, (given,))])
    inner = s.take_message(s.entrypoint or 0).attachments[0].handle  # type: ignore[union-attr]
    s.drop_receiver(inner)
    s.commands()
    for i in range(5000):  # more closes than the recently-discarded filter remembers
        other = ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=100 + i)
        s._halves.remember_discarded(other)
    feed(s, 6, [Message(given, 1)])
    assert s.state_sizes()["pending_receivers"] == 0
    assert not [x for x in s.commands() if not isinstance(x, GrantCredit)]  # no ChannelControl of a ghost

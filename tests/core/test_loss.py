"""Reachability, creation links, cascading loss and ClosedChannelLost."""

from __future__ import annotations

import pytest
from core_helpers import client_ready, close_code, feed, of, pair, server_ready

from aqueduct.core.app import (
    AttachKind,
    Delivery,
    MessageAvailable,
    MessagesAcked,
    MessagesNacked,
    SenderEnded,
)
from aqueduct.errors import EndReason
from aqueduct.wire.channel_id import ChannelId, Side
from aqueduct.wire.frames import AckNackUnreliable, ChannelControl, ClosedChannelLost

RECV = [AttachKind.RECEIVER]


def _chain(c, first_delivery: Delivery, depth: int, now: float):  # type: ignore[no-untyped-def]
    """Entrypoint -> s1 -> s2 ...: each message creates the next sender; the last sender sends data."""
    senders = []
    (prev,) = c.send(c.entrypoint or 0, b"m1", RECV, delivery=first_delivery, now=now).created
    senders.append(prev)
    for i in range(depth - 1):
        (prev,) = c.send(prev, b"m%d" % (i + 2), RECV, now=now).created
        senders.append(prev)
    c.send(prev, b"data", now=now)
    return senders


@pytest.mark.spec("cascading-loss")
def test_cascading_loss_through_three_levels() -> None:
    sim = pair()
    c, s = sim.client.engine, sim.server.engine
    sim.drop_next_datagram(Side.CLIENT)  # the message creating level 1
    senders = _chain(c, Delivery.UNRELIABLE, 3, sim.now)
    sim.run_until_idle()
    for tx in senders:
        assert SenderEnded(tx, EndReason.LOST) in sim.client.events
        assert MessagesNacked(tx, True, 0, 1) in sim.client.events
        assert not [e for e in of(sim.client.events, MessagesAcked) if e.sender == tx]
    assert MessagesNacked(c.entrypoint or 0, False, 0, 1) in sim.client.events
    assert not [e for e in sim.server.events if isinstance(e, MessageAvailable) and e.receiver != s.entrypoint]
    assert c.state_sizes()["links"] == 0
    sizes = s.state_sizes()
    assert sizes["pending_receivers"] == 0 and sizes["receivers"] == 1


@pytest.mark.spec("cascading-loss")
def test_an_ack_of_a_child_before_its_parents_nack_still_ends_lost() -> None:
    sim = pair()
    sim.trace = []
    c = sim.client.engine
    sim.drop_next_datagram(Side.CLIENT)
    (tx,) = _chain(c, Delivery.UNRELIABLE, 1, sim.now)
    sim.advance(0.5)
    assert any("S SendStreamData" in line and "data=b'\\x05" in line for line in sim.trace)  # the child was acked
    assert not [e for e in of(sim.client.events, MessagesAcked) if e.sender == tx]  # ...but not reported
    sim.run_until_idle()
    assert MessagesNacked(tx, True, 0, 1) in sim.client.events
    assert SenderEnded(tx, EndReason.LOST) in sim.client.events


@pytest.mark.spec("reachable")
def test_reachability_empties_the_link_table() -> None:
    sim = pair()
    c = sim.client.engine
    senders = _chain(c, Delivery.ORDERED, 3, sim.now)
    assert c.state_sizes()["links"] == 4  # the entrypoint's children and three unreachable senders
    sim.run_until_idle()
    assert c.state_sizes()["links"] == 0
    for tx in senders:
        assert MessagesAcked(tx, True, 0, 1) in sim.client.events


@pytest.mark.spec("closed-channel-lost")
def test_closed_channel_lost_after_a_clean_close() -> None:
    sim = pair()
    sim.trace = []
    c, s = sim.client.engine, sim.server.engine
    sim.drop_next_datagram(Side.CLIENT)
    (tx,) = c.send(c.entrypoint or 0, b"m1", RECV, delivery=Delivery.UNRELIABLE, now=sim.now).created
    c.send(tx, b"x", now=sim.now)
    c.finish(tx, now=sim.now)
    assert sim.run_until(lambda: SenderEnded(tx, EndReason.FINISHED) in sim.client.events)
    assert s.state_sizes()["pending_receivers"] == 1  # closed cleanly, kept for its creating message
    sim.run_until_idle()
    ccl = [line for line in sim.trace if "C SendStreamData" in line and "data=b'\\t" in line]
    assert len(ccl) == 1 and "end_stream=True" in ccl[0]
    assert MessagesNacked(tx, True, 0, 1) in sim.client.events  # its held-back ack turned into a nack
    sizes = s.state_sizes()
    assert sizes["pending_receivers"] == 0 and sizes["receivers"] == 1
    assert c.state_sizes()["links"] == 0


@pytest.mark.spec("closed-channel-lost")
def test_closed_channel_lost_for_an_unknown_channel_is_ignored() -> None:
    s = server_ready()
    gone = ChannelId.make(to=Side.SERVER, minted_by=Side.CLIENT, oneshot=False, index=5)
    feed(s, 2, [ClosedChannelLost(gone)], end=True)
    assert close_code(s.commands()) is None


def _nack_root(c) -> None:  # type: ignore[no-untyped-def]
    feed(c, 1, [ChannelControl(0), AckNackUnreliable((0, 1))])


@pytest.mark.spec("cascading-loss")
def test_cascade_runs_10000_levels_deep_without_recursion() -> None:
    c = client_ready()
    senders = _chain(c, Delivery.UNRELIABLE, 10_000, 0.0)
    c.commands()
    c.events()
    _nack_root(c)
    lost = {e.sender for e in of(c.events(), SenderEnded) if e.reason is EndReason.LOST}
    assert lost == set(senders)
    assert c.state_sizes()["links"] == 0


@pytest.mark.spec("cascading-loss")
def test_cascade_runs_10000_wide() -> None:
    c = client_ready()
    (root,) = c.send(c.entrypoint or 0, b"root", RECV, delivery=Delivery.UNRELIABLE).created
    kids = [c.send(root, b"", RECV).created[0] for _ in range(10_000)]
    c.commands()
    c.events()
    _nack_root(c)
    lost = {e.sender for e in of(c.events(), SenderEnded) if e.reason is EndReason.LOST}
    assert lost == {root, *kids}
    assert c.state_sizes()["links"] == 0


@pytest.mark.spec("closed-channel-lost")
def test_closed_channel_lost_for_a_finished_sender_found_lost_before_close_receiver() -> None:
    sim = pair()
    sim.trace = []
    c, s = sim.client.engine, sim.server.engine
    sim.drop_next_datagram(Side.CLIENT)
    (tx,) = c.send(c.entrypoint or 0, b"m1", RECV, delivery=Delivery.UNRELIABLE, now=sim.now).created
    c.send(tx, b"x", now=sim.now)
    c.finish(tx, now=sim.now)
    known = set(sim.streams(Side.SERVER))

    def new_ctrl() -> list[int]:
        return [sid for sid in sim.streams(Side.SERVER) if sid & 3 == 1 and sid not in known]

    assert sim.run_until(lambda: bool(new_ctrl()))
    ctrl = new_ctrl()[0]
    assert sim.trace is not None
    trace = sim.trace
    assert sim.run_until(lambda: any(f"C SendStreamData(stream_id={ctrl}," in line for line in trace))  # attached
    sim.hold_stream(Side.SERVER, ctrl)  # the server's CloseReceiver will not reach the client in time
    sim.run_until_idle()
    assert SenderEnded(tx, EndReason.LOST) in sim.client.events
    assert any("C SendStreamData" in line and "data=b'\\t" in line for line in sim.trace)
    sim.release_stream(Side.SERVER, ctrl)
    sim.run_until_idle()
    assert s.state_sizes()["pending_receivers"] == 0 and not c.closed and not s.closed

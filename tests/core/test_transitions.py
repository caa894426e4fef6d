"""The halves' state tables: every move the tables do not allow raises IllegalTransition, every move they
allow is made, and the engine's paths through the receiver's states (CLOSE_WAIT included) follow the table."""

from __future__ import annotations

import itertools

import pytest
from core_helpers import client_ready, feed, pair, written

from aqueduct.core import receiver, sender
from aqueduct.core.app import AttachKind, ReceiverEnded
from aqueduct.core.receiver import ReceiverRecord, RState
from aqueduct.core.sender import SenderRecord, SState
from aqueduct.core.transitions import IllegalTransition
from aqueduct.errors import AqueductError, EndReason
from aqueduct.wire.channel_id import ENTRYPOINT, ChannelId
from aqueduct.wire.frames import ChannelControl, CloseReceiver


@pytest.mark.parametrize(("frm", "to"), list(itertools.product(SState, SState)))
def test_a_sender_moves_only_as_its_table_allows(frm: SState, to: SState) -> None:
    s = SenderRecord(1, ENTRYPOINT, reachable=True, exposed=True, state=frm)
    if to in sender.TRANSITIONS[frm]:
        s.move(to)
        assert s.state is to
    else:
        with pytest.raises(IllegalTransition):
            s.move(to)
        assert s.state is frm


@pytest.mark.parametrize(("frm", "to"), list(itertools.product(RState, RState)))
def test_a_receiver_moves_only_as_its_table_allows(frm: RState, to: RState) -> None:
    r = ReceiverRecord(1, ENTRYPOINT, exposed=True, claimed=True, state=frm)
    if to in receiver.TRANSITIONS[frm]:
        r.move(to)
        assert r.state is to
    else:
        with pytest.raises(IllegalTransition):
            r.move(to)
        assert r.state is frm


def test_every_state_is_reachable_from_open_and_gone_is_final() -> None:
    for table, start, gone in ((sender.TRANSITIONS, SState.OPEN, SState.GONE),
                               (receiver.TRANSITIONS, RState.OPEN, RState.GONE)):
        seen, todo = {start}, [start]
        while todo:
            for nxt in table[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        assert seen == set(table)
        assert table[gone] == frozenset()  # type: ignore[index]
        assert all(gone in table[s] for s in table if s is not gone)  # type: ignore[index, operator]
    assert issubclass(IllegalTransition, AqueductError)


@pytest.mark.spec("close.receiver")
def test_a_receiver_closed_before_its_control_stream_waits_in_close_wait() -> None:
    c = client_ready()
    result = c.send(1, b"x", [AttachKind.SENDER])  # the peer gets the sender; we keep the receiver
    (handle,) = result.created
    r = c._receivers[handle]
    channel = r.channel
    c.close_receiver(handle)
    assert r.state is RState.CLOSE_WAIT and r.close_reason is EndReason.CLOSED
    c.commands()
    feed(c, 1, [ChannelControl(int(channel))])  # stream 1: the peer opens the receiver's control stream
    assert r.state is RState.GONE
    (close,) = [f for f in written(c.commands(), 1) if isinstance(f, CloseReceiver)]
    assert close == CloseReceiver(())
    assert [e for e in c.events() if isinstance(e, ReceiverEnded)] == [ReceiverEnded(handle, EndReason.CLOSED)]
    assert ChannelId(int(channel)).minted_by is c.side


@pytest.mark.spec("finish.receiver")
def test_a_finished_channel_walks_open_finishing_gone() -> None:
    sim = pair()
    c, s = sim.client.engine, sim.server.engine
    c.send(c.entrypoint or 0, b"m", now=sim.now)
    sim.run_until_idle()
    r = s._receivers[s.entrypoint or 0]
    assert r.state is RState.OPEN
    c.finish(c.entrypoint or 0, now=sim.now)
    sim.run_until_idle()
    assert r.state is RState.GONE and r.end_reason is EndReason.FINISHED

"""0-RTT: rejected early data still arrives once; early datagrams end nacked; the server gate."""

from __future__ import annotations

import dataclasses

import pytest
from core_helpers import of

from aqueduct.core.app import Delivery, MessagesAcked, MessagesNacked, SenderEnded
from aqueduct.core.config import EngineConfig
from aqueduct.core.engine import Engine
from aqueduct.errors import EndReason
from aqueduct.testing import NetConfig, Simulation
from aqueduct.wire.channel_id import Side

EARLY = NetConfig(one_way=0.02, jitter=0.0, chunk_gap=0.0, split_chunks=True, zero_rtt=True)


def _early_sends(accept: bool, replay_safe: bool = False) -> Simulation[Engine]:
    net = dataclasses.replace(EARLY, accept_0rtt=accept)
    server = Engine(Side.SERVER, config=EngineConfig(replay_safe_0rtt=replay_safe))
    sim = Simulation(Engine(Side.CLIENT), server, net, seed=5, trace=True)
    c = sim.client.engine
    ep = c.entrypoint or 0
    for i in range(3):
        c.send(ep, b"r%d" % i, now=sim.now)
        c.send(ep, b"u%d" % i, delivery=Delivery.UNRELIABLE, now=sim.now)
    c.finish(ep, now=sim.now)
    sim.run_until_idle()
    return sim


def _payloads(sim: Simulation[Engine]) -> list[bytes]:
    s = sim.server.engine
    out = []
    while (m := s.take_message(s.entrypoint or 0)) is not None:
        out.append(m.payload)
    return out


@pytest.mark.spec("zero-rtt.client")
def test_rejected_0rtt_stream_bytes_arrive_once_and_early_datagrams_end_nacked() -> None:
    sim = _early_sends(accept=False)
    assert _payloads(sim) == [b"r0", b"r1", b"r2"]
    evs = sim.client.events
    nacked = sorted(n for e in of(evs, MessagesNacked) if not e.reliable for n in range(e.first, e.stop))
    acked = sorted(n for e in of(evs, MessagesAcked) if e.reliable for n in range(e.first, e.stop))
    assert nacked == [0, 1, 2] and acked == [0, 1, 2]
    assert SenderEnded(sim.client.engine.entrypoint or 0, EndReason.FINISHED) in evs


@pytest.mark.spec("zero-rtt.server")
def test_accepted_0rtt_is_held_by_the_server_until_its_handshake_completes() -> None:
    sim = _early_sends(accept=True)
    assert sim.trace is not None
    first_server_write = min(float(line.split()[0]) for line in sim.trace if line.split()[1] == "S")
    assert first_server_write >= sim.server_handshake_at
    assert sorted(_payloads(sim)) == [b"r0", b"r1", b"r2", b"u0", b"u1", b"u2"]


@pytest.mark.spec("zero-rtt.server")
def test_a_replay_safe_server_processes_0rtt_before_its_handshake_completes() -> None:
    sim = _early_sends(accept=True, replay_safe=True)
    assert sim.trace is not None
    first_server_write = min(float(line.split()[0]) for line in sim.trace if line.split()[1] == "S")
    assert first_server_write < sim.server_handshake_at

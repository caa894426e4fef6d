"""The engine-only rows' relay (aqueduct/bench/engine.py) hands the other engine what the adapter would: consecutive
writes to one stream joined into one event (quic/writes.py), a FIN riding on its run, any other command letting
the run go first, and every message of a measured batch delivered once, in order."""

from __future__ import annotations

from typing import Any

from aqueduct.bench.engine import Pair, _relay
from aqueduct.core.transport import (
    DatagramReceived,
    ResetStream,
    SendDatagram,
    SendStreamData,
    StreamDataReceived,
    StreamReset,
)


class _Src:
    def __init__(self, cmds: list[Any]) -> None:
        self.cmds = cmds

    def commands(self) -> list[Any]:
        return self.cmds


class _Dst:
    def __init__(self) -> None:
        self.got: list[Any] = []

    def handle_event(self, ev: Any, now: float) -> None:
        self.got.append(ev)


def test_runs_of_one_stream_are_joined_as_the_adapter_joins_them() -> None:
    cmds = [SendStreamData(2, b"a"), SendStreamData(2, b"b"), SendStreamData(6, b"x"), SendDatagram(b"d"),
            SendStreamData(6, b"y"), SendStreamData(6, b"", True), SendStreamData(10, b"u", True),
            SendStreamData(2, b"c"), ResetStream(14, 1), SendStreamData(2, b"e")]
    dst = _Dst()
    assert _relay(_Src(cmds), dst, 0.0) == len(cmds)  # type: ignore[arg-type]
    assert dst.got == [StreamDataReceived(2, b"ab"), StreamDataReceived(6, b"x"), DatagramReceived(b"d"),
                       StreamDataReceived(6, b"y", True), StreamDataReceived(10, b"u", True),
                       StreamDataReceived(2, b"c"), StreamReset(14, 1), StreamDataReceived(2, b"e")]


def test_a_measured_batch_arrives_whole_and_in_order() -> None:
    pair = Pair()
    c, s = pair.client, pair.server
    ([tx], [rx]) = pair.open_idle(1)
    sent = [bytes([i]) * 64 for i in range(256)]
    for p in sent:
        c.send(tx, p, now=pair.clock.now())
    pair.pump()
    got = []
    while (m := s.take_message(rx, now=pair.clock.now())) is not None:
        got.append(m.payload)
    assert got == sent


def test_the_engine_curve_counts_what_the_receiving_engine_handed_out() -> None:
    """The engine rows' msgs/s is of messages the receiving engine handed out (the far side), each one sent;
    the cascade row's channels all ended LOST; the idle-memory row opened the receivers it divides by."""
    from aqueduct.bench.engine import Pair, _throughput, cascade_seconds

    curve, _, counted = _throughput([10, 40], 1024)
    assert [n for n, _ in curve] == [10, 40] and counted == [(1024, 1024), (1024, 1024)]
    assert cascade_seconds(57)[1] == 57
    senders, receivers = Pair().open_idle(23)
    assert len(senders) == len(set(receivers)) == 23

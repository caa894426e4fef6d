"""Acks when taken (EngineConfig.ack_on_take, decision API-34): a refused reliable message is never acked.

The receiving engine is driven with events and the application's calls; what it writes on the wire is read
back as frames. With ack_on_take a reliable message is owed its ack when the application takes it; one it
refuses right after taking it (`Engine.refuse`) is in no AckReliable and is negative (nacked) in the
CloseReceiver, while those accepted before it are acked; reading on past it (`Engine.accept_refused`) acks it.
A finish closes once every message arrived, acking what is still queued (its queue stays takeable) but not
what was refused. The fast path (Intake._queue_next) and the general one (Intake._process) write the same.
Without the option (the default: the conformance vectors) the engine acks what it queued, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from aqueduct.core.app import AppEvent, Delivered, Delivery, MessagesAcked, MessagesNacked
from aqueduct.core.config import EngineConfig
from aqueduct.core.engine import Engine
from aqueduct.core.transport import (
    DatagramReceived,
    HandshakeCompleted,
    SendDatagram,
    SendStreamData,
    StreamDataReceived,
    TransportCommand,
    TransportEvent,
)
from aqueduct.wire.channel_id import Side
from aqueduct.wire.frames import AckReliable, CloseReceiver, Frame
from aqueduct.wire.ranges import ranges_to_runs
from aqueduct.wire.reader import decode_frames

ON_TAKE = EngineConfig(ack_on_take=True)
DELAY = ON_TAKE.ack_delay


class _General(Engine):
    """The oracle: every message takes Intake's general procedure alone (as tests/core/test_hot_paths.py's)."""

    def __init__(self, side: Side, *, config: EngineConfig | None = None) -> None:
        super().__init__(side, config=config)
        self._in._plain_runs = lambda rec, data: data  # type: ignore[method-assign]
        self._intake._queue_unreliable = lambda channel, n, payload: 0  # type: ignore[method-assign]
        self._intake._queue_next = lambda channel, first, payloads, sizes, at, sid: 0  # type: ignore[method-assign]


SERVERS = [pytest.param(Engine, id="fast"), pytest.param(_General, id="general", marks=pytest.mark.pure_python)]
"""(The oracle replaces methods of the engine's parts: it runs on the pure-Python modules.)"""


class Pair:
    """A client sending on its entrypoint to a server engine (`server` class, `config`), pumped by hand."""

    def __init__(self, server: type[Engine] = Engine, config: EngineConfig | None = ON_TAKE) -> None:
        self.c, self.s = Engine(Side.CLIENT), server(Side.SERVER, config=config)
        self.s.handle_event(HandshakeCompleted(), 0.0)
        self.now = 0.0
        self.wrote: dict[int, bytes] = {}
        """Server stream -> every byte it wrote there."""
        self.client_events: list[AppEvent] = []
        self.pump()
        self.rx = self.s.entrypoint
        assert self.rx is not None and self.c.entrypoint is not None
        self.tx = self.c.entrypoint

    def pump(self) -> None:
        for _ in range(4):
            for src, dst in ((self.c, self.s), (self.s, self.c)):
                cmds = src.commands()
                if src is self.s:
                    for cmd in cmds:
                        if isinstance(cmd, SendStreamData):
                            self.wrote[cmd.stream_id] = self.wrote.get(cmd.stream_id, b"") + cmd.data
                for ev in _events(cmds):
                    dst.handle_event(ev, self.now)
            self.client_events += self.c.events()
            self.s.events()

    def tick(self, dt: float) -> None:
        self.now += dt
        self.c.handle_timer(self.now)
        self.s.handle_timer(self.now)
        self.pump()

    def send(self, n: int, mode: Delivery = Delivery.ORDERED) -> None:
        for i in range(n):
            self.c.send(self.tx, b"m%d" % i, (), mode, self.now)
        self.pump()

    def take(self, limit: int) -> list[Delivered]:
        got = self.s.take_many(self.rx, limit, self.now)
        return got

    def frames(self, kind: type[Frame]) -> list[Frame]:
        """The server's frames of `kind`, on every stream it wrote (its control streams)."""
        out: list[Frame] = []
        for sid, data in self.wrote.items():
            if sid % 4 != 3:  # (server unidirectional streams carry messages; none here)
                out += [f for f in decode_frames(data) if isinstance(f, kind)]
        return out

    def acked(self) -> set[int]:
        """Reliable numbers the server acked in AckReliable frames."""
        acked: set[int] = set()
        prefix = 0
        for f in self.frames(AckReliable):
            assert isinstance(f, AckReliable)
            for first, stop, positive in ranges_to_runs(prefix, f.ranges):
                if positive:
                    acked.update(range(first, stop))
            while prefix in acked:
                prefix += 1
        return acked

    def outcome(self) -> dict[int, str]:
        """The client's view: reliable number -> "acked" / "nacked"."""
        out: dict[int, str] = {}
        for ev in self.client_events:
            if isinstance(ev, MessagesAcked | MessagesNacked) and ev.reliable and ev.sender == self.tx:
                for n in range(ev.first, ev.stop):
                    assert n not in out, f"message {n} settled twice"
                    out[n] = "acked" if isinstance(ev, MessagesAcked) else "nacked"
        return out


def _events(cmds: Sequence[TransportCommand]) -> list[TransportEvent]:
    return [StreamDataReceived(c.stream_id, c.data, c.end_stream) if isinstance(c, SendStreamData)
            else DatagramReceived(c.data) for c in cmds if isinstance(c, SendStreamData | SendDatagram)]


@pytest.mark.parametrize("server", SERVERS)
def test_a_refused_message_is_never_acked_and_is_nacked_at_close(server: type[Engine]) -> None:
    p = Pair(server)
    p.send(5)
    p.tick(2 * DELAY)
    assert p.acked() == set()  # queued, not taken: nothing owed yet
    got = p.take(10)
    assert [d.number for d in got] == [0, 1, 2, 3, 4]
    p.s.refuse(p.rx, got[2:], p.now)  # message 2 is not a T; 3 and 4 were taken after it
    p.tick(2 * DELAY)
    assert p.acked() == {0, 1}
    assert p.outcome() == {0: "acked", 1: "acked"}
    p.s.close_receiver(p.rx, p.now)  # (what `async for` does on the refusal)
    p.pump()
    [close] = p.frames(CloseReceiver)
    assert isinstance(close, CloseReceiver)
    assert all(not positive for _, _, positive in ranges_to_runs(2, close.ranges))
    assert p.acked() == {0, 1}
    assert p.outcome() == {0: "acked", 1: "acked", 2: "nacked", 3: "nacked", 4: "nacked"}


@pytest.mark.parametrize("server", SERVERS)
def test_reading_on_past_a_refusal_acks_it(server: type[Engine]) -> None:
    p = Pair(server)
    p.send(3)
    got = p.take(10)
    p.s.refuse(p.rx, got[1:], p.now)
    p.tick(2 * DELAY)
    assert p.acked() == {0}
    p.s.accept_refused(p.rx, p.now)  # on_invalid="drop", or a `recv` after the error: the wire cannot nack one
    p.tick(2 * DELAY)
    assert p.acked() == {0, 1, 2}
    assert p.outcome() == {0: "acked", 1: "acked", 2: "acked"}


@pytest.mark.parametrize("server", SERVERS)
def test_a_finish_acks_what_is_queued_but_not_what_was_refused(server: type[Engine]) -> None:
    p = Pair(server)
    p.send(3)
    got = p.take(2)
    p.s.refuse(p.rx, got[1:], p.now)  # 1 refused; 2 still queued when the finish comes
    p.send(2)
    p.c.finish(p.tx, p.now)
    p.pump()
    [close] = p.frames(CloseReceiver)
    assert p.outcome() == {0: "acked", 1: "nacked", 2: "acked", 3: "acked", 4: "acked"}
    assert 1 not in p.acked()
    assert [d.number for d in p.take(10)] == [2, 3, 4]  # a finished channel's queue stays takeable
    assert close == p.frames(CloseReceiver)[0]


@pytest.mark.parametrize("server", SERVERS)
def test_an_untaken_message_is_nacked_when_the_receiver_closes(server: type[Engine]) -> None:
    p = Pair(server)
    p.send(3)
    p.take(1)
    p.tick(2 * DELAY)
    p.s.close_receiver(p.rx, p.now)
    p.pump()
    assert p.outcome() == {0: "acked", 1: "nacked", 2: "nacked"}


def test_a_refusal_after_its_ack_was_written_is_a_library_bug() -> None:
    p = Pair()
    p.send(1)
    got = p.take(1)
    p.tick(2 * DELAY)
    with pytest.raises(ValueError, match="not owed"):
        p.s.refuse(p.rx, got, p.now)


def test_unreliable_messages_are_acked_when_queued_whatever_the_option() -> None:
    p = Pair()
    p.send(2, Delivery.UNRELIABLE)
    p.tick(2 * DELAY)
    p.c.finish(p.tx, p.now)
    p.pump()
    events = [e for e in p.client_events if isinstance(e, MessagesAcked) and not e.reliable]
    assert [(e.first, e.stop) for e in events] == [(0, 2)]


def test_without_the_option_the_engine_acks_what_it_queued() -> None:
    p = Pair(config=None)
    p.send(3)
    p.tick(2 * DELAY)
    assert p.acked() == {0, 1, 2}  # nothing was taken (the conformance vectors' behaviour)


@pytest.mark.pure_python  # (the oracle replaces methods of the engine's parts)
@pytest.mark.parametrize("steps", [
    [("send", 4), ("take", 2), ("refuse", 1), ("tick", 0), ("send", 3), ("take", 9), ("tick", 0), ("accept", 0),
     ("tick", 0), ("close", 0)],
    [("send", 6), ("take", 6), ("refuse", 0), ("send", 2), ("tick", 0), ("close", 0)],
    [("send", 2), ("tick", 0), ("take", 1), ("send", 2), ("take", 9), ("refuse", 2), ("finish", 0)],
])
def test_the_fast_path_writes_what_the_general_path_writes(steps: list[tuple[str, int]]) -> None:
    logs = []
    for server in (Engine, _General):
        p = Pair(server)
        last: list[Delivered] = []
        for kind, arg in steps:
            if kind == "send":
                p.send(arg)
            elif kind == "take":
                last = p.take(arg)
            elif kind == "refuse":
                p.s.refuse(p.rx, last[arg:], p.now)
            elif kind == "accept":
                p.s.accept_refused(p.rx, p.now)
            elif kind == "tick":
                p.tick(DELAY)
            elif kind == "close":
                p.s.close_receiver(p.rx, p.now)
                p.pump()
            else:
                p.c.finish(p.tx, p.now)
                p.pump()
        logs.append((p.wrote, p.outcome()))
    assert logs[0] == logs[1]

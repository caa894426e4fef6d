"""One path per direction, fast by batches: the batches do exactly what messages one by one would.

- Plain ordered writes in a row to one stream become one write; a FIN, a large payload or any other command
  in between keeps its own.
- send_many and take_many (batches) against send and take_message one by one, on twin engine pairs fed the same
  inputs cut into random chunks: the same bytes on each stream, datagrams, events and messages. Likewise a
  receiver queueing each chunk's run of plain messages as one batch against the oracle, an engine whose every
  message takes Intake's general procedure alone (`_NoRuns`).
- send_many refuses, before anything is sent, what send would refuse of any of its messages.
- The random driver (aqueduct.testing.driver) run with take_many, with a check after every call that each
  receiver's ack timer holds what a fresh scheduling would set: the receive batches skip rescheduling when
  nothing it depends on changed, which is only sound while that holds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TypeVar

import pytest
from core_helpers import client_ready
from hypothesis import given, settings
from hypothesis import strategies as st

from aqueduct.core.app import AttachKind, Delivered, Delivery, SendResult
from aqueduct.core.config import EngineConfig
from aqueduct.core.engine import Engine
from aqueduct.core.receiver import RState
from aqueduct.core.timers import ACKS
from aqueduct.core.transport import (
    DatagramReceived,
    HandshakeCompleted,
    SendDatagram,
    SendStreamData,
    StreamDataReceived,
    TransportCommand,
    TransportEvent,
)
from aqueduct.errors import ChannelClosed, LimitExceeded
from aqueduct.testing.driver import DrivenEngine, Run, config_for, draw
from aqueduct.wire.channel_id import Side
from aqueduct.wire.frames import encode_message

_T = TypeVar("_T")


def _as_events(cmds: Sequence[TransportCommand], chunk: int) -> list[TransportEvent]:
    out: list[TransportEvent] = []
    for cmd in cmds:
        if isinstance(cmd, SendStreamData):
            data = cmd.data
            pieces = [data[i : i + chunk] for i in range(0, len(data), chunk)] or [b""]
            out += [StreamDataReceived(cmd.stream_id, p, cmd.end_stream and i == len(pieces) - 1)
                    for i, p in enumerate(pieces)]
        elif isinstance(cmd, SendDatagram):
            out.append(DatagramReceived(cmd.data))
    return out


def _joined(cmds: Sequence[TransportCommand]) -> list[TransportCommand]:
    """Consecutive writes (no FIN) to one stream as one write: how many writes carried the bytes aside."""
    out: list[TransportCommand] = []
    for cmd in cmds:
        last = out[-1] if out else None
        if (isinstance(cmd, SendStreamData) and isinstance(last, SendStreamData) and last.stream_id == cmd.stream_id
                and not last.end_stream):
            out[-1] = SendStreamData(cmd.stream_id, last.data + cmd.data, cmd.end_stream)
        else:
            out.append(cmd)
    return out


class _Twin:
    """A connected client/server pair; `batched` pairs send with send_many (consecutive sends of one kind between
    other steps as one batch) and take with take_many, the others one message at a time. Every pump joins
    consecutive writes to one stream, as the adapter does (_joined)."""

    def __init__(self, batched: bool, server: type[Engine] = Engine, config: EngineConfig | None = None) -> None:
        self.batched = batched
        self.batch: list[bytes] = []
        self.batch_kind = Delivery.ORDERED
        self.c, self.s = Engine(Side.CLIENT), server(Side.SERVER, config=config)
        self.s.handle_event(HandshakeCompleted(), 0.0)
        self.log: list[object] = []
        self.held: list[TransportEvent] = []
        self.now = 0.0
        self.pump(1 << 20, 0.0)

    def flush(self) -> None:
        """Send the batch gathered so far."""
        if self.batch:
            batch, self.batch = self.batch, []
            self.c.send_many(self.c.entrypoint or 0, batch, self.batch_kind, self.now)

    def pump(self, chunk: int, now: float, hold: int = 0) -> None:
        """Deliver both ways; the last `hold` client-to-server events wait for the next pump."""
        self.flush()
        for src, dst in ((self.c, self.s), (self.s, self.c)):
            cmds = _joined(src.commands())
            self.log.append(cmds)
            events = _as_events(cmds, chunk)
            if dst is self.s:
                events, self.held = self.held + events, []
                if hold:
                    events, self.held = events[:-hold], events[-hold:]
            for ev in events:
                dst.handle_event(ev, now)
            self.log.append(dst.events())

    def send(self, delivery: Delivery, size: int, now: float) -> None:
        tx = self.c.entrypoint or 0
        if self.batched:
            if delivery is not self.batch_kind or now != self.now:
                self.flush()
            self.batch_kind, self.now = delivery, now
            self.batch.append(bytes(size))
        else:
            self.c.send(tx, bytes(size), (), delivery, now)

    def take(self, limit: int, now: float, refuse: int | None = None) -> None:
        """Take up to `limit` messages; with `refuse`, refuse those from that index on at once (ack_on_take)."""
        self.flush()
        rx = self.s.entrypoint or 0
        got: list[Delivered] = []
        if self.batched:
            got = self.s.take_many(rx, limit, now)
        else:
            while len(got) < limit and (d := self.s.take_message(rx, now)) is not None:
                got.append(d)
        if refuse is not None and self.s.config.ack_on_take:
            self.s.refuse(rx, got[refuse:], now)
        self.log.append(got)

    def tick(self, now: float) -> None:
        self.flush()
        self.c.handle_timer(now)
        self.s.handle_timer(now)


_step = st.one_of(
    st.tuples(st.just("send"), st.sampled_from(list(Delivery)), st.sampled_from([0, 1, 64, 130, 1000, 20_000])),
    st.tuples(st.just("pump"), st.sampled_from([1, 7, 100, 1200, 1 << 20]), st.just(0)),
    st.tuples(st.just("take"), st.integers(0, 12), st.just(0)),
    st.tuples(st.just("tick"), st.just(0), st.just(0)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_step, max_size=60))
def test_send_many_and_take_many_match_send_and_take_message(steps: list[tuple[object, object, int]]) -> None:
    twins = [_Twin(batched=False), _Twin(batched=True)]
    now = 0.0
    for kind, arg, size in steps:
        if kind == "tick":
            now += 0.03
        for t in twins:
            if kind == "send":
                assert isinstance(arg, Delivery)
                if arg is Delivery.UNRELIABLE and size > 1000:
                    continue  # over the datagram limit: both raise, covered below
                t.send(arg, size, now)
            elif kind == "pump":
                assert isinstance(arg, int)
                t.pump(arg, now)
            elif kind == "take":
                assert isinstance(arg, int)
                t.take(arg, now)
            else:
                t.tick(now)
    for t in twins:
        t.pump(1 << 20, now)
        t.c.finish(t.c.entrypoint or 0, now)  # (SentUnreliable, if the datagrams were counted as owed)
        t.pump(1 << 20, now)
    assert twins[0].log == twins[1].log
    assert twins[1].c.state_sizes() == twins[0].c.state_sizes()
    assert twins[1].s.state_sizes() == twins[0].s.state_sizes()


def test_send_many_refuses_before_sending_anything() -> None:
    c = client_ready()
    sid = c.send_many(1, [b"a", b"b"])
    assert sid is not None and c.send_many(1, [b"c", b"d"]) == sid
    c.commands()
    with pytest.raises(LimitExceeded):
        c.send_many(1, [b"ok", bytes(c.config.max_frame_size + 1)])
    with pytest.raises(LimitExceeded):
        c.send_many(1, [b"ok", bytes(2000)], Delivery.UNRELIABLE)
    assert c.send_many(1, []) == sid
    assert c.commands() == []  # nothing of the refused batches went out
    c.send_many(1, [bytearray(b"e")])  # type: ignore[list-item]  # (copied to bytes)
    assert c.commands() == [SendStreamData(sid, encode_message(0, 4, (), b"e"))]
    c.finish(1)
    c.commands()
    with pytest.raises(ChannelClosed):
        c.send_many(1, [b"x"])


def test_a_oneshot_sender_takes_a_batch_of_one() -> None:
    c = client_ready()
    (tx,) = c.send(1, b"", [AttachKind.ONESHOT_RECEIVER]).created
    with pytest.raises(ChannelClosed):
        c.send_many(tx, [b"a", b"b"])
    c.send_many(tx, [b"a"])
    with pytest.raises(ChannelClosed):
        c.send_many(tx, [b"b"])


class _NoRuns(Engine):
    """The oracle: an engine whose messages always take the general path (no `_plain_runs`, and Intake's batches
    never meet the fast conditions, so each message goes through `Intake._process` alone)."""

    def __init__(self, side: Side, *, config: EngineConfig | None = None) -> None:
        super().__init__(side, config=config)
        self._in._plain_runs = lambda rec, data: data  # type: ignore[method-assign]
        self._intake._queue_unreliable = lambda channel, n, payload: 0  # type: ignore[method-assign]
        self._intake._queue_next = lambda channel, first, payloads, sizes, at, sid: 0  # type: ignore[method-assign]


_SMALL_QUEUE = EngineConfig(max_receiver_queue_messages=6, max_receiver_queue_bytes=3000)


_burst = st.tuples(
    st.sampled_from(["burst", "burst", "datagrams", "unordered"]),
    st.integers(1, 20),
    st.sampled_from([0, 5, 64, 200, 700, 1500]),
)
_BURSTS = {"burst": Delivery.ORDERED, "datagrams": Delivery.UNRELIABLE, "unordered": Delivery.UNORDERED}
_run_step = st.one_of(
    _burst,
    _burst,
    _step,
    st.tuples(st.just("pump"), st.sampled_from([90, 300, 1200, 1500]), st.integers(0, 3)),
    st.tuples(st.just("take"), st.integers(1, 64), st.just(0)),
    st.tuples(st.just("refuse"), st.integers(1, 64), st.integers(0, 8)),
    st.tuples(st.just("accept"), st.just(0), st.just(0)),
)


@pytest.mark.pure_python  # _NoRuns replaces methods of the engine's parts
@settings(max_examples=200, deadline=None)
@given(st.lists(_run_step, max_size=40), st.booleans(), st.booleans())
def test_runs_of_plain_messages_are_queued_as_one_by_one(steps: list[tuple[object, object, int]], small: bool,
                                                         on_take: bool) -> None:
    """A chunk's run of in-order plain Messages queued at once, and plain messages queued by the short paths: the
    same commands, events and messages as the general path, including a run cut by a full queue (small queues),
    and with acks owed when taken (EngineConfig.ack_on_take: takes that refuse some, reading on that accepts)."""
    config = _SMALL_QUEUE if small else None
    if on_take:
        config = dataclasses.replace(config or EngineConfig(), ack_on_take=True)
    twins = [_Twin(batched=True, server=_NoRuns, config=config), _Twin(batched=True, config=config)]
    now = 0.0
    for kind, arg, size in steps:
        if kind == "tick":
            now += 0.03
        for t in twins:
            if kind == "send":
                assert isinstance(arg, Delivery)
                if size > (1000 if arg is Delivery.UNRELIABLE else 2900 if small else 1 << 20):
                    continue  # over the datagram or queue limit: covered elsewhere
                t.send(arg, size, now)
            elif kind in _BURSTS:
                assert isinstance(arg, int)
                for _ in range(arg):
                    t.send(_BURSTS[kind], min(size, 900), now)
            elif kind == "pump":
                assert isinstance(arg, int)
                t.pump(arg, now, size)
            elif kind == "take":
                assert isinstance(arg, int)
                t.take(arg, now)
            elif kind == "refuse":
                assert isinstance(arg, int)
                t.take(arg, now, refuse=size)
            elif kind == "accept":
                if t.s.config.ack_on_take:
                    t.s.accept_refused(t.s.entrypoint or 0, now)
            else:
                t.tick(now)
    for t in twins:
        t.pump(1 << 20, now)
    assert twins[0].log == twins[1].log
    assert twins[0].s.state_sizes() == twins[1].s.state_sizes()


@pytest.mark.pure_python  # _NoRuns replaces methods of the engine's parts
@pytest.mark.parametrize("small", [False, True])
def test_a_run_whose_first_frame_was_partly_credited_matches_the_general_path(small: bool) -> None:
    """Frames cut across pumps, everything taken in between (the partial frame is credited while it waits), then
    the rest and more in one chunk: a run starting with that frame is credited as the general path credits it."""
    config = _SMALL_QUEUE if small else None
    twins = [_Twin(batched=True, server=_NoRuns, config=config), _Twin(batched=True, config=config)]
    for t in twins:
        for _ in range(5):
            t.send(Delivery.ORDERED, 64, 0.0)
        t.pump(100, 0.0, hold=1)
        t.take(64, 0.0)
        for _ in range(12):
            t.send(Delivery.ORDERED, 64, 0.0)
        t.pump(1200, 0.01)
        t.take(3, 0.02)
        t.pump(1200, 0.02)
    assert twins[0].log == twins[1].log
    takes = [len(x) for x in twins[0].log if isinstance(x, list) and x and isinstance(x[0], Delivered)]
    assert takes == [4, 3]  # (the fifth frame waited, partly credited, for the second pump)


class _PlainChecked(Engine):
    """The driver's engine, taking with take_many, and checking after every call that every receiver's ack timer
    is where Receivers.schedule would put it."""

    problems: list[str]

    def send(
        self,
        sender: int,
        payload: bytes,
        attach: Sequence[AttachKind] = (),
        delivery: Delivery = Delivery.ORDERED,
        now: float | None = None,
    ) -> SendResult:
        return self._checked(super().send(sender, payload, attach, delivery, now))

    def take_message(self, receiver: int, now: float | None = None) -> Delivered | None:
        got = self.take_many(receiver, 1, now)
        return self._checked(got[0] if got else None)

    def handle_event(self, event: TransportEvent, now: float) -> None:
        super().handle_event(event, now)
        self._checked(None)

    def handle_timer(self, now: float) -> None:
        super().handle_timer(now)
        self._checked(None)

    def _checked(self, result: _T) -> _T:
        for r in list(self._receivers.values()):
            if r.state is RState.GONE or (r.acks is not None and r.acks.owed() and r.acks.ack_due is None):
                continue  # gone, or due "now" (a time that moves): nothing fixed to compare
            key = (ACKS, r.handle)
            armed = self._timers.armed_at(key)
            self._rx.schedule(r)
            if self._timers.armed_at(key) != armed:
                self.problems.append(f"receiver {r.handle}: timer at {armed}, due at {self._timers.armed_at(key)}")
        return result


@pytest.mark.parametrize("start", range(0, 300, 100))
@pytest.mark.parametrize("on_take", [False, True], ids=["acks-queued", "acks-taken"])
def test_random_scripts_through_the_hot_calls_keep_every_invariant(start: int, on_take: bool) -> None:
    """(`on_take`: EngineConfig.ack_on_take, the API's engines: acks owed when the driver takes a message.)"""
    for seed in range(start, start + 100):
        net, script = draw(seed)  # as run_seed draws them
        config = dataclasses.replace(config_for(seed, ghosts=seed % 2 == 1), ack_on_take=on_take)
        if net.datagram_dup:
            config = dataclasses.replace(config, discarded_filter_size=EngineConfig.discarded_filter_size)
        engines: list[_PlainChecked] = []

        def make(side: Side, config: EngineConfig = config, engines: list[_PlainChecked] = engines) -> DrivenEngine:
            e = _PlainChecked(side, headers=[("driver", side.name.encode())], config=config)
            e.problems = []
            engines.append(e)
            return e

        result = Run(seed, script, net, make, config=config, strict=True).execute()
        assert result.ok, (seed, result.violations[:3])
        assert not [p for e in engines for p in e.problems], (seed, engines[0].problems[:3], engines[1].problems[:3])


def test_each_send_is_one_write_and_the_engine_joins_none() -> None:
    """A send is one command (a batch of messages too); joining writes of a loop turn is the adapter's
    (tests/quic/test_writes.py)."""
    c = client_ready()
    sid = c.send(1, b"first").stream_id
    assert sid is not None
    c.commands()
    for n in range(1, 4):
        assert c.send(1, bytes([n])).stream_id == sid
    c.send(1, b"u", (), Delivery.UNRELIABLE)
    assert c.send_many(1, [b"y", b"z"]) == sid
    c.finish(1)
    cmds = c.commands()
    assert cmds[:3] == [SendStreamData(sid, encode_message(0, n, (), bytes([n]))) for n in range(1, 4)]
    assert isinstance(cmds[3], SendDatagram)
    assert cmds[4:] == [SendStreamData(sid, encode_message(0, 4, (), b"y") + encode_message(0, 5, (), b"z")),
                        SendStreamData(sid, b"", True)]

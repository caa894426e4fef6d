"""The per-message fast paths behave exactly as the general ones.

- Plain ordered writes in a row to one stream become one write; a FIN, a large payload or any other command
  in between keeps its own.
- send_plain / take_many (what the API calls) against send / take_message, on twin engine pairs fed the same
  inputs cut into random chunks: same commands, events and messages. Likewise a receiver queueing runs of plain
  messages at once against one taking every frame the general way.
- send_plain_bytes and send_datagram_bytes (the API's write-it-yourself paths) against send: the same bytes
  on each stream and the same datagrams, in the same order among the other commands.
- The random driver (aqueduct.testing.driver) run through send_plain and take_many, with a check after every
  call that each receiver's ack timer holds what a fresh scheduling would set: the receive fast paths skip
  rescheduling when nothing it depends on changed, which is only sound while that holds.
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
from aqueduct.core.transport import (
    DatagramReceived,
    HandshakeCompleted,
    SendDatagram,
    SendStreamData,
    StreamDataReceived,
    TransportCommand,
    TransportEvent,
)
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
    """A connected client/server pair; `plain` pairs use send_plain and take_many; `direct` ones also
    send_plain_bytes, their writes put before the client's commands (and every pump joins writes, _joined)."""

    def __init__(self, plain: bool, server: type[Engine] = Engine, config: EngineConfig | None = None,
                 direct: bool | None = None) -> None:
        self.plain = plain
        self.direct = direct
        """None: no joining; else whether to use send_plain_bytes."""
        self.written: list[TransportCommand] = []
        self.c, self.s = Engine(Side.CLIENT), server(Side.SERVER, config=config)
        self.s.handle_event(HandshakeCompleted(), 0.0)
        self.log: list[object] = []
        self.held: list[TransportEvent] = []
        self.pump(1 << 20, 0.0)

    def pump(self, chunk: int, now: float, hold: int = 0) -> None:
        """Deliver both ways; the last `hold` client-to-server events wait for the next pump."""
        for src, dst in ((self.c, self.s), (self.s, self.c)):
            cmds = src.commands()
            if self.direct is not None:
                if src is self.c:
                    cmds, self.written = self.written + cmds, []
                cmds = _joined(cmds)
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
        if self.direct and delivery is Delivery.ORDERED:
            direct = self.c.send_plain_bytes(tx, bytes(size), now)
            if direct is not None:
                self.written.append(SendStreamData(*direct))
                self.log.append(direct[0])
                return
        if self.direct and delivery is Delivery.UNRELIABLE:
            datagram = self.c.send_datagram_bytes(tx, bytes(size), now)
            if datagram is not None:
                self.written.append(SendDatagram(datagram))
                self.log.append(None)
                return
        if self.plain:
            self.log.append(self.c.send_plain(tx, bytes(size), delivery, now))
        else:
            self.log.append(self.c.send(tx, bytes(size), (), delivery, now).stream_id)

    def take(self, limit: int, now: float) -> None:
        rx = self.s.entrypoint or 0
        got: list[Delivered] = []
        if self.plain:
            got = self.s.take_many(rx, limit, now)
        else:
            while len(got) < limit and (d := self.s.take_message(rx, now)) is not None:
                got.append(d)
        self.log.append(got)


_step = st.one_of(
    st.tuples(st.just("send"), st.sampled_from(list(Delivery)), st.sampled_from([0, 1, 64, 130, 1000, 20_000])),
    st.tuples(st.just("pump"), st.sampled_from([1, 7, 100, 1200, 1 << 20]), st.just(0)),
    st.tuples(st.just("take"), st.integers(0, 12), st.just(0)),
    st.tuples(st.just("tick"), st.just(0), st.just(0)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_step, max_size=60))
def test_send_plain_and_take_many_match_send_and_take_message(steps: list[tuple[object, object, int]]) -> None:
    twins = [_Twin(plain=False), _Twin(plain=True)]
    now = 0.0
    for kind, arg, size in steps:
        if kind == "tick":
            now += 0.03
        for t in twins:
            if kind == "send":
                assert isinstance(arg, Delivery)
                if arg is Delivery.UNRELIABLE and size > 1000:
                    continue  # over the datagram limit: both raise, covered in test_app_api
                t.send(arg, size, now)
            elif kind == "pump":
                assert isinstance(arg, int)
                t.pump(arg, now)
            elif kind == "take":
                assert isinstance(arg, int)
                t.take(arg, now)
            else:
                t.c.handle_timer(now)
                t.s.handle_timer(now)
    for t in twins:
        t.pump(1 << 20, now)
    assert twins[0].log == twins[1].log


@settings(max_examples=150, deadline=None)
@given(st.lists(_step, max_size=60))
def test_send_plain_bytes_writes_what_send_plain_emits(steps: list[tuple[object, object, int]]) -> None:
    twins = [_Twin(plain=False, direct=False), _Twin(plain=True, direct=True)]
    now = 0.0
    for kind, arg, size in steps:
        if kind == "tick":
            now += 0.03
        for t in twins:
            if kind == "send":
                assert isinstance(arg, Delivery)
                if arg is Delivery.UNRELIABLE and size > 1000:
                    continue
                t.send(arg, size, now)
            elif kind == "pump":
                assert isinstance(arg, int)
                t.pump(arg, now)
            elif kind == "take":
                assert isinstance(arg, int)
                t.take(arg, now)
            else:
                t.c.handle_timer(now)
                t.s.handle_timer(now)
    for t in twins:
        t.pump(1 << 20, now)
        t.c.finish(t.c.entrypoint or 0, now)  # (SentUnreliable, if the datagrams were counted as owed)
        t.pump(1 << 20, now)
    assert twins[0].log == twins[1].log
    assert twins[1].c.state_sizes() == twins[0].c.state_sizes()


def test_send_plain_bytes_leaves_every_other_case_to_send_plain() -> None:
    c = client_ready()
    assert c.send_plain_bytes(1, b"first", 0.0) is None  # no ordered stream yet: send_plain opens it
    sid = c.send_plain(1, b"first")
    assert c.send_plain_bytes(1, b"queued", 0.0) is None  # a command waits: it must go first
    c.commands()
    assert c.send_plain_bytes(1, b"x", 0.0) == (sid, encode_message(0, 1, (), b"x"))
    assert c.send_plain_bytes(1, bytearray(b"x"), 0.0) is None  # type: ignore[arg-type]  # not bytes
    assert c.send_plain_bytes(99, b"x", 0.0) is None  # no such sender
    assert c.send_datagram_bytes(1, b"d", 0.0) == encode_message(0, 0, (), b"d")
    assert c.send_datagram_bytes(1, b"d" * 2000, 0.0) is None  # over the datagram limit: send_plain raises
    c.finish(1)
    c.commands()
    assert c.send_plain_bytes(1, b"x", 0.0) is None  # finished
    assert c.send_datagram_bytes(1, b"x", 0.0) is None


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
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_run_step, max_size=40), st.booleans())
def test_runs_of_plain_messages_are_queued_as_one_by_one(steps: list[tuple[object, object, int]], small: bool) -> None:
    """A chunk's run of in-order plain Messages queued at once, and plain messages queued by the short paths: the
    same commands, events and messages as the general path, including a run cut by a full queue (small queues)."""
    config = _SMALL_QUEUE if small else None
    twins = [_Twin(plain=True, server=_NoRuns, config=config), _Twin(plain=True, config=config)]
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
            else:
                t.c.handle_timer(now)
                t.s.handle_timer(now)
    for t in twins:
        t.pump(1 << 20, now)
    assert twins[0].log == twins[1].log
    assert twins[0].s.state_sizes() == twins[1].s.state_sizes()


@pytest.mark.parametrize("small", [False, True])
def test_a_run_whose_first_frame_was_partly_credited_matches_the_general_path(small: bool) -> None:
    """Frames cut across pumps, everything taken in between (the partial frame is credited while it waits), then
    the rest and more in one chunk: a run starting with that frame is credited as the general path credits it."""
    config = _SMALL_QUEUE if small else None
    twins = [_Twin(plain=True, server=_NoRuns, config=config), _Twin(plain=True, config=config)]
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
    assert takes == [3, 3]  # (the fourth frame waited, partly credited, for the second pump)


class _PlainChecked(Engine):
    """The driver's engine, sending plain messages with send_plain, taking with take_many, and checking
    after every call that every receiver's ack timer is where Receivers.schedule would put it."""

    problems: list[str]

    def send(
        self,
        sender: int,
        payload: bytes,
        attach: Sequence[AttachKind] = (),
        delivery: Delivery = Delivery.ORDERED,
        now: float | None = None,
    ) -> SendResult:
        if attach:
            return self._checked(super().send(sender, payload, attach, delivery, now))
        s = self._senders.get(sender)
        number = 0 if s is None else s.next_unrel if delivery is Delivery.UNRELIABLE else s.next_rel
        return self._checked(SendResult(number, (), self.send_plain(sender, payload, delivery, now)))

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
            key = ("rx", r.handle)
            armed = self._timers.armed_at(key)
            self._rx.schedule(r)
            if self._timers.armed_at(key) != armed:
                self.problems.append(f"receiver {r.handle}: timer at {armed}, due at {self._timers.armed_at(key)}")
        return result


@pytest.mark.parametrize("start", range(0, 300, 100))
def test_random_scripts_through_the_hot_calls_keep_every_invariant(start: int) -> None:
    for seed in range(start, start + 100):
        net, script = draw(seed)  # as run_seed draws them
        config = config_for(seed, ghosts=seed % 2 == 1)
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


def test_plain_ordered_writes_in_a_row_reach_the_adapter_as_one_write() -> None:
    c = client_ready()
    sid = c.send_plain(1, b"first")
    assert sid is not None
    c.commands()
    for n in range(1, 4):
        assert c.send_plain(1, bytes([n])) == sid
    c.send_plain(1, b"u", Delivery.UNRELIABLE)  # another command: the next write starts anew
    c.send_plain(1, b"z")
    c.finish(1)
    frames = [encode_message(0, n, (), bytes([n])) for n in range(1, 4)]
    cmds = c.commands()
    assert cmds[0] == SendStreamData(sid, b"".join(frames))
    assert isinstance(cmds[1], SendDatagram)
    assert cmds[2:] == [SendStreamData(sid, encode_message(0, 4, (), b"z")), SendStreamData(sid, b"", True)]


def test_large_plain_writes_are_not_joined() -> None:
    c = client_ready()
    big = bytes(5000)
    sid = c.send_plain(1, b"first")
    assert sid is not None
    c.commands()
    c.send_plain(1, big)
    c.send_plain(1, big)
    assert c.commands() == [SendStreamData(sid, encode_message(0, n, (), big)) for n in (1, 2)]

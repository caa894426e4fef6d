"""A random application driver for two engines under a random network, with an invariant checker.

`run_seed(seed)` draws a network (NetConfig.random) and a script
(random_script) from the seed, plays the script on both apps in the
simulator, then runs the finale: repeatedly drain every receiver (adopting
attached handles) and finish every sender until nothing moves; checks
liveness (every handle ended, every message resolved and delivered or
excused by the app's own cancel/close/drop) and the ledger's safety rules;
drops every handle and checks that neither engine keeps channel, link or
timer state. Any exception escaping an engine is a violation. `shrink`
deletes actions while the same kind of violation persists.
"""

from __future__ import annotations

import dataclasses
import random
import re
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, cast

from ..core.app import (
    AppEvent,
    AttachKind,
    ConnectionClosed,
    Delivered,
    Delivery,
    HeadersReceived,
    MessageAvailable,
    MessagesAcked,
    MessagesNacked,
    ReceiverEnded,
    SenderEnded,
    SendResult,
    WritableAgain,
)
from ..core.config import EngineConfig
from ..errors import ERROR_FOR_REASON, ChannelClosed, ChannelError, EndReason, LimitExceeded, WouldBlock
from ..wire.channel_id import Side
from .endpoint import EngineLike
from .ledger import Ledger, encode_payload
from .netconfig import NetConfig
from .script import Action, ActionKind, random_script
from .sim import Simulation, SimulationError

LEAK_KEYS = ("senders", "receivers", "links", "timers", "pending_receivers", "held_bytes", "channel_map")
"""state_sizes() keys that must be zero once every handle is gone; `streams` may keep the connection control stream."""


class DrivenEngine(EngineLike, Protocol):
    """The application surface of the engine the driver uses (aqueduct.core.engine.Engine)."""

    @property
    def entrypoint(self) -> int | None: ...
    def send(
        self,
        sender: int,
        payload: bytes,
        attach: Sequence[AttachKind] = (),
        delivery: Delivery = Delivery.ORDERED,
        now: float | None = None,
    ) -> SendResult: ...
    def finish(self, sender: int, now: float | None = None) -> None: ...
    def cancel(self, sender: int, now: float | None = None) -> None: ...
    def close_receiver(self, receiver: int, now: float | None = None) -> None: ...
    def take_message(self, receiver: int, now: float | None = None) -> Delivered | None: ...
    def drop_sender(self, sender: int, now: float | None = None) -> None: ...
    def drop_receiver(self, receiver: int, now: float | None = None) -> None: ...
    def close(self, error_code: int = 0, reason: str = "", now: float | None = None) -> None: ...
    def state_sizes(self) -> dict[str, int]: ...
    def sender_status(self, handle: int) -> EndReason | None: ...
    def receiver_status(self, handle: int) -> EndReason | None: ...


EngineFactory = Callable[[Side], DrivenEngine]


def default_factory(config: EngineConfig | None = None) -> EngineFactory:
    """Real engines with `config`."""
    from ..core.engine import Engine

    def make(side: Side) -> DrivenEngine:
        return cast(DrivenEngine, Engine(side, headers=[("driver", side.name.encode())], config=config))

    return make


@dataclass
class _App:
    """What one side's application holds."""

    side: Side
    senders: list[int] = field(default_factory=list)
    receivers: list[int] = field(default_factory=list)
    sender_state: dict[int, str] = field(default_factory=dict)
    """open | finishing | cancelled | ended"""
    receiver_closed: set[int] = field(default_factory=set)
    available: set[int] = field(default_factory=set)
    blocked: set[int] = field(default_factory=set)
    seen_sender_end: dict[int, EndReason] = field(default_factory=dict)
    seen_receiver_end: dict[int, EndReason] = field(default_factory=dict)


@dataclass
class RunResult:
    """The outcome of one run."""

    seed: int
    net: NetConfig
    script: list[Action]
    violations: list[str]
    stats: dict[str, int]
    config: EngineConfig | None = None
    strict: bool = False

    @property
    def ok(self) -> bool:
        """No violation."""
        return not self.violations


class Run:
    """One script on one simulated connection, checked."""

    def __init__(
        self,
        seed: int,
        script: list[Action],
        net: NetConfig,
        factory: EngineFactory | None = None,
        *,
        config: EngineConfig | None = None,
        strict: bool = False,
    ) -> None:
        self.seed = seed
        self.script = script
        self.net = net
        self.config = config
        self.strict = strict
        """Also check the rules with known open engine bugs: late calls (POKE) and credit beyond consumption."""
        make = factory or default_factory(config)
        self.sim: Simulation[DrivenEngine] = Simulation(make(Side.CLIENT), make(Side.SERVER), net, seed=seed)
        self.ledger = Ledger()
        self.apps = {Side.CLIENT: _App(Side.CLIENT), Side.SERVER: _App(Side.SERVER)}
        self.connection_lost = False
        self.closed_by_driver = False
        self._tags = 0
        self._misuse_seen = 0
        self._overcredit_seen = 0
        self.stats: dict[str, int] = {"sent": 0, "delivered": 0, "acked": 0, "nacked": 0, "skipped": 0}

    @property
    def violations(self) -> list[str]:
        """Everything found so far."""
        return self.ledger.violations

    def execute(self) -> RunResult:
        """Play the script and the finale, check everything."""
        try:
            ep = self.sim.client.engine.entrypoint
            if ep is None:
                self.violations.append("client has no entrypoint sender")
            else:
                self.ledger.new_channel("E", Side.CLIENT, False)
                self._adopt_sender(Side.CLIENT, ep, "E")
            self._absorb()
            for action in self.script:
                self._advance(action.dt)
                self._act(action)
                self._absorb()
            self._finale()
        except (SimulationError, AssertionError) as exc:
            self.violations.append(f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # an exception escaping an engine is itself a violation
            tb = traceback.extract_tb(exc.__traceback__)[-3:]
            where = " <- ".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} {f.name}" for f in reversed(tb))
            self.violations.append(f"exception {type(exc).__name__}: {exc} at {where}")
        self.stats["sim_time_ms"] = int(self.sim.now * 1000)
        for k in ("datagrams_sent", "datagrams_dropped", "stream_chunks"):
            self.stats[k] = self.sim.stats[k]
        self.stats["max_depth"] = max((r.depth for r in self.ledger.channels.values()), default=0)
        for key, unreliable in (("max_resolve_ms", False), ("max_unreliable_resolve_ms", True)):
            self.stats[key] = max(
                (
                    int((m.resolved_at - m.sent_at) * 1000)
                    for m in self.ledger.messages.values()
                    if m.resolved_at is not None and (m.delivery is Delivery.UNRELIABLE or not unreliable)
                ),
                default=0,
            )
        return RunResult(self.seed, self.net, self.script, self.violations, self.stats, self.config, self.strict)

    # ---- time and events ----
    def _advance(self, dt: float) -> None:
        if dt:
            self.sim.advance(dt)
        self._absorb()

    def _absorb(self) -> None:
        """Pump the simulation and apply every new app event to the ledger and app state."""
        self.sim.pump()
        for side in (Side.CLIENT, Side.SERVER):
            for ev in self.sim.endpoint(side).take_events():
                self._on_event(side, ev)
        for m in self.sim.misuse[self._misuse_seen :]:
            self.violations.append(f"transport misuse: {m}")
        self._misuse_seen = len(self.sim.misuse)
        if self.strict:
            for m in self.sim.overcredit[self._overcredit_seen :]:
                self.violations.append(f"credit beyond consumption: {m}")
            self._overcredit_seen = len(self.sim.overcredit)

    def _on_event(self, side: Side, ev: AppEvent) -> None:
        app = self.apps[side]
        if isinstance(ev, HeadersReceived):
            if side is Side.SERVER:
                if ev.entrypoint is None:
                    self.violations.append("server HeadersReceived without an entrypoint receiver")
                else:
                    self._adopt_receiver(side, ev.entrypoint, "E")
        elif isinstance(ev, MessageAvailable):
            app.available.add(ev.receiver)
        elif isinstance(ev, ReceiverEnded):
            if ev.receiver in app.seen_receiver_end:
                self.violations.append(f"{side.name} receiver {ev.receiver} ended twice")
            app.seen_receiver_end[ev.receiver] = ev.reason
            tag = self.ledger.receiver_tag(side, ev.receiver)
            if tag is not None:
                self.ledger.channels[tag].receiver_end = ev.reason
        elif isinstance(ev, SenderEnded):
            if ev.sender in app.seen_sender_end:
                self.violations.append(f"{side.name} sender {ev.sender} ended twice")
            app.seen_sender_end[ev.sender] = ev.reason
            if ev.sender in app.sender_state:
                app.sender_state[ev.sender] = "ended"
            tag = self.ledger.sender_tag(side, ev.sender)
            if tag is not None:
                self.ledger.channels[tag].sender_end = ev.reason
        elif isinstance(ev, MessagesAcked | MessagesNacked):
            ack = isinstance(ev, MessagesAcked)
            self.stats["acked" if ack else "nacked"] += max(0, ev.stop - ev.first)
            self.ledger.on_acknack(side, ev.sender, ev.reliable, ev.first, ev.stop, ack, self.sim.now)
        elif isinstance(ev, WritableAgain):
            app.blocked.discard(ev.sender)
        elif isinstance(ev, ConnectionClosed):
            self.connection_lost = True
            if not self.closed_by_driver:
                self.violations.append(f"{side.name}: connection closed: code {ev.error_code} {ev.reason!r}")

    # ---- handles ----
    def _adopt_sender(self, side: Side, handle: int, tag: str) -> None:
        app = self.apps[side]
        self.ledger.bind_sender(side, handle, tag)
        app.senders.append(handle)
        app.sender_state[handle] = "ended" if handle in app.seen_sender_end else "open"

    def _adopt_receiver(self, side: Side, handle: int, tag: str) -> None:
        app = self.apps[side]
        self.ledger.bind_receiver(side, handle, tag)
        app.receivers.append(handle)
        if handle in app.seen_receiver_end:
            self.ledger.channels[tag].receiver_end = app.seen_receiver_end[handle]

    def _new_tag(self) -> str:
        self._tags += 1
        return f"c{self._tags}"

    @staticmethod
    def _pick(handles: list[int], pick: int) -> int | None:
        return handles[-1 - pick % len(handles)] if handles else None

    # ---- actions ----
    def _act(self, a: Action) -> None:
        if self.connection_lost and a.kind is not ActionKind.DRAIN:
            self.stats["skipped"] += 1
            return
        do = getattr(self, f"_do_{a.kind.value}")
        if not do(self.apps[a.side], a) and not do(self.apps[a.side.other], a):
            self.stats["skipped"] += 1  # neither app had a handle to do it with

    def _engine(self, side: Side) -> DrivenEngine:
        return self.sim.endpoint(side).engine

    def _do_send(self, app: _App, a: Action) -> bool:
        live = [h for h in app.senders if app.sender_state[h] == "open" and h not in app.blocked]
        h = self._pick(live, a.pick)
        if h is None:
            return False
        tag = self.ledger.sender_tag(app.side, h)
        assert tag is not None
        rec = self.ledger.channels[tag]
        if rec.oneshot and rec.sends:
            return False
        return self._send(app, h, tag, a.delivery, a.attach, a.pad)

    def _send(self, app: _App, h: int, tag: str, delivery: Delivery, attach: Sequence[AttachKind], pad: int) -> bool:
        rec = self.ledger.channels[tag]
        tags = [self._new_tag() for _ in attach]
        if self.net.stream_window is not None:  # a frame bigger than the window could never arrive
            pad = min(pad, self.net.stream_window - 100)
        if self.config is not None:  # nor one bigger than a receiver queue (the peer closes the connection)
            pad = min(pad, self.config.max_receiver_queue_bytes - 100)
        payload = encode_payload(tag, rec.sends, tags, pad)
        try:
            res = self._engine(app.side).send(h, payload, attach, delivery, now=self.sim.now)
        except WouldBlock:
            app.blocked.add(h)
            self.stats["would_block"] = self.stats.get("would_block", 0) + 1
            return False
        except LimitExceeded:
            limit = self.config.max_datagram_payload if self.config else EngineConfig.max_datagram_payload
            if delivery is not Delivery.UNRELIABLE or len(payload) + 64 < limit:
                raise  # only a datagram at the limit may be refused
            self.stats["too_big"] = self.stats.get("too_big", 0) + 1
            return False
        if len(res.created) != len(attach):
            self.violations.append(f"send created {len(res.created)} halves for {len(attach)} attachments")
        self.ledger.on_send(app.side, h, tag, rec.sends, delivery, res.number, self.sim.now)
        self.stats["sent"] += 1
        peer = app.side.other
        for kind, t, created in zip(attach, tags, res.created, strict=False):
            self.ledger.new_channel(t, peer if kind.gives_sender else app.side, kind.oneshot, (tag, rec.sends - 1))
            if kind.gives_sender:
                self._adopt_receiver(app.side, created, t)
            else:
                self._adopt_sender(app.side, created, t)
        if rec.oneshot:
            rec.finish_called = True
            app.sender_state[h] = "ended" if app.sender_state[h] == "ended" else "finishing"
        return True

    def _spare_entrypoint(self, app: _App, handles: list[int], a: Action, sender: bool) -> list[int]:
        """Ending the entrypoint ends most of a script's activity: only large picks may do it."""
        if a.pick >= 4:
            return handles
        tag = self.ledger.sender_tag if sender else self.ledger.receiver_tag
        return [h for h in handles if tag(app.side, h) != "E"]

    def _do_finish(self, app: _App, a: Action) -> bool:
        live = [h for h in app.senders if app.sender_state[h] == "open"]
        h = self._pick(self._spare_entrypoint(app, live, a, True), a.pick)
        if h is None:
            return False
        self._finish(app, h)
        return True

    def _finish(self, app: _App, h: int) -> None:
        self._engine(app.side).finish(h, now=self.sim.now)
        app.sender_state[h] = "ended" if app.sender_state[h] == "ended" else "finishing"
        tag = self.ledger.sender_tag(app.side, h)
        assert tag is not None
        self.ledger.channels[tag].finish_called = True

    def _do_cancel(self, app: _App, a: Action) -> bool:
        live = [h for h in app.senders if app.sender_state[h] == "open"]
        h = self._pick(self._spare_entrypoint(app, live, a, True), a.pick)
        if h is None:
            return False
        self._engine(app.side).cancel(h, now=self.sim.now)
        app.sender_state[h] = "cancelled"
        self._abandon_sender(app, h)
        return True

    def _abandon_sender(self, app: _App, h: int) -> None:
        tag = self.ledger.sender_tag(app.side, h)
        assert tag is not None
        rec = self.ledger.channels[tag]
        if not rec.finish_called:
            rec.sender_abandoned = True

    def _do_drop_sender(self, app: _App, a: Action) -> bool:
        h = self._pick(self._spare_entrypoint(app, app.senders, a, True), a.pick)
        if h is None:
            return False
        self._drop_sender(app, h)
        return True

    def _drop_sender(self, app: _App, h: int) -> None:
        self._engine(app.side).drop_sender(h, now=self.sim.now)
        app.senders.remove(h)
        self._abandon_sender(app, h)
        if h not in app.seen_sender_end:
            self.ledger.channels[self._tag(app, h, True)].dropped_early = True

    def _do_close_receiver(self, app: _App, a: Action) -> bool:
        live = [h for h in app.receivers if h not in app.seen_receiver_end and h not in app.receiver_closed]
        h = self._pick(self._spare_entrypoint(app, live, a, False), a.pick)
        if h is None:
            return False
        self._engine(app.side).close_receiver(h, now=self.sim.now)
        app.receiver_closed.add(h)
        self._discard_receiver(app, h)
        return True

    def _discard_receiver(self, app: _App, h: int) -> None:
        tag = self.ledger.receiver_tag(app.side, h)
        assert tag is not None
        drained = app.seen_receiver_end.get(h) is EndReason.FINISHED and h not in app.available
        if not drained:
            self.ledger.channels[tag].receiver_discarded = True

    def _do_drop_receiver(self, app: _App, a: Action) -> bool:
        h = self._pick(self._spare_entrypoint(app, app.receivers, a, False), a.pick)
        if h is None:
            return False
        self._drop_receiver(app, h)
        return True

    def _drop_receiver(self, app: _App, h: int) -> None:
        self._discard_receiver(app, h)
        self._engine(app.side).drop_receiver(h, now=self.sim.now)
        app.receivers.remove(h)
        if h not in app.seen_receiver_end:
            self.ledger.channels[self._tag(app, h, False)].dropped_early = True

    def _tag(self, app: _App, h: int, sender: bool) -> str:
        tag = (self.ledger.sender_tag if sender else self.ledger.receiver_tag)(app.side, h)
        assert tag is not None
        return tag

    def _do_take(self, app: _App, a: Action) -> bool:
        h = self._pick([h for h in app.receivers if h in app.available], a.pick)
        if h is None:
            return False
        self._take(app, h, a.discard)
        return True

    def _do_drain(self, app: _App, a: Action) -> bool:
        h = self._pick([h for h in app.receivers if h in app.available], a.pick)
        if h is None:
            return False
        while self._take(app, h, a.discard):
            pass
        return True

    def _take(self, app: _App, h: int, discard: bool) -> bool:
        """Take one message from receiver `h`; False if there was none."""
        announced = h in app.available
        d = self._engine(app.side).take_message(h, now=self.sim.now)
        if d is None:
            app.available.discard(h)
            return False
        if not announced:
            self.violations.append(f"{app.side.name} receiver {h}: a message was queued without MessageAvailable")
        ended = app.seen_receiver_end.get(h)
        if ended is not None and ended is not EndReason.FINISHED:
            self.violations.append(f"{app.side.name} receiver {h}: message taken after it ended {ended.value}")
        self.stats["delivered"] += 1
        tags = self.ledger.on_deliver(app.side, h, d)
        for att in d.attachments:
            if not 0 <= att.index < len(tags):
                self.violations.append(f"attachment index {att.index} out of range")
                continue
            if att.is_sender:
                self._adopt_sender(app.side, att.handle, tags[att.index])
                if discard:
                    self._drop_sender(app, att.handle)
            else:
                self._adopt_receiver(app.side, att.handle, tags[att.index])
                if discard:
                    self._drop_receiver(app, att.handle)
        self._absorb()
        return True

    def _do_poke(self, app: _App, a: Action) -> bool:
        """Call into a handle that is past its prime; only documented outcomes are allowed (strict runs only)."""
        if not self.strict:
            return False
        senders = [h for h in app.senders if app.sender_state[h] != "open"]
        receivers = [h for h in app.receivers if h in app.seen_receiver_end or h in app.receiver_closed]
        h = self._pick(senders + receivers, a.pick)
        if h is None:
            return False
        eng = self._engine(app.side)
        if h in senders:
            ended = app.seen_sender_end.get(h)
            want = ChannelClosed if ended in (None, EndReason.FINISHED) else ERROR_FOR_REASON[ended]
            what = f"{app.side.name} sender {h} ({app.sender_state[h]}, ended {ended})"
            self._expect(what, "send", want, lambda: eng.send(h, b"late", (), a.delivery, now=self.sim.now))
            if ended is None and app.sender_state[h] == "finishing":
                self._expect(what, "cancel", ChannelClosed, lambda: eng.cancel(h, now=self.sim.now))
            else:  # ended: a no-op (after a completed finish, ChannelClosed is as good)
                err = ChannelClosed if ended is EndReason.FINISHED else None
                self._expect(what, "cancel", err, lambda: eng.cancel(h, now=self.sim.now), none_ok=True)
        else:
            ended_r = app.seen_receiver_end.get(h)
            what = f"{app.side.name} receiver {h} (ended {ended_r}, closed {h in app.receiver_closed})"
            if ended_r is not EndReason.FINISHED:
                self._expect(what, "take_message", None, lambda: eng.take_message(h, now=self.sim.now))
            self._expect(what, "close_receiver", None, lambda: eng.close_receiver(h, now=self.sim.now))
        self._absorb()
        return True

    def _expect(
        self,
        what: str,
        call: str,
        error: type[ChannelError] | None,
        fn: Callable[[], object],
        *,
        none_ok: bool = False,
    ) -> None:
        """`fn` must raise `error` (or a subclass), or return None when `error` is None or `none_ok`."""
        try:
            out = fn()
        except ChannelError as exc:
            if error is None or not isinstance(exc, error):
                self.violations.append(f"{what}: {call} raised {type(exc).__name__}, expected {_name(error)}")
            return
        if out is not None or (error is not None and not none_ok):
            self.violations.append(f"{what}: {call} returned {out!r:.80}, expected {_name(error)}")

    def _do_close_connection(self, app: _App, a: Action) -> bool:
        """Odd picks: the transport dies under both (idle timeout); even: the app closes the connection."""
        self.closed_by_driver = True
        if a.pick % 2:
            self.sim.terminate(0, "idle timeout")
        else:
            self._engine(app.side).close(0, "driver", now=self.sim.now)
        return True

    # ---- the finale and the end checks ----
    def _finale(self) -> None:
        for _ in range(200):
            self.sim.run_until_idle(max_time=600)
            self._absorb()
            if self.connection_lost:
                break
            moved = False
            for app in self.apps.values():
                for h in list(app.receivers):
                    while h in app.receivers and self._take(app, h, False):
                        moved = True
                for h in list(app.senders):
                    if app.sender_state[h] == "open":
                        self._finish(app, h)
                        moved = True
                self._absorb()
            if not moved:
                break
        else:
            self.violations.append("finale: still moving after 200 rounds")
        self.sim.run_until_idle(max_time=600)
        self._absorb()
        self._check_ends()
        self.ledger.final_check(self.connection_lost)
        for app in self.apps.values():
            for h in list(app.senders):
                self._drop_sender(app, h)
            for h in list(app.receivers):
                self._drop_receiver(app, h)
        self._absorb()
        self.sim.run_until_idle(max_time=600)
        self._absorb()
        self._check_leaks()

    def _check_ends(self) -> None:
        for app in self.apps.values():
            who = app.side.name
            eng = self._engine(app.side)
            for h in app.senders:
                if eng.sender_status(h) != app.seen_sender_end.get(h):
                    self.violations.append(
                        f"{who} sender {h}: status {eng.sender_status(h)}, events said {app.seen_sender_end.get(h)}"
                    )
            for h in app.receivers:
                if eng.receiver_status(h) != app.seen_receiver_end.get(h):
                    self.violations.append(
                        f"{who} receiver {h}: status {eng.receiver_status(h)}, events said "
                        f"{app.seen_receiver_end.get(h)}"
                    )
            for h in app.senders:
                if h not in app.seen_sender_end:
                    self.violations.append(
                        f"stuck: {who} sender {h} ({self.ledger.sender_tag(app.side, h)}, "
                        f"{app.sender_state[h]}) never ended"
                    )
            for h in app.receivers:
                if h not in app.seen_receiver_end:
                    self.violations.append(
                        f"stuck: {who} receiver {h} ({self.ledger.receiver_tag(app.side, h)}) never ended"
                    )
        if self.connection_lost:
            return
        for rec in self.ledger.channels.values():
            clean = rec.finish_called and not (rec.sender_abandoned or rec.receiver_discarded or rec.dropped_early)
            if clean and rec.receiver is not None and rec.sender is not None:
                if rec.sender_end is not EndReason.FINISHED or rec.receiver_end is not EndReason.FINISHED:
                    self.violations.append(
                        f"channel {rec.tag}: finished cleanly but sender ended {rec.sender_end} and "
                        f"receiver {rec.receiver_end}"
                    )

    def _check_leaks(self) -> None:
        for side in (Side.CLIENT, Side.SERVER):
            eng = self._engine(side)
            sizes = eng.state_sizes()
            leaks = {k: sizes.get(k, 0) for k in LEAK_KEYS if sizes.get(k, 0)}
            if sizes.get("streams", 0) > (0 if self.connection_lost else 1):
                leaks["streams"] = sizes["streams"]
            if leaks:
                self.violations.append(f"leak: {side.name} state_sizes {leaks} after every handle was dropped")
            if eng.next_deadline() is not None:
                self.violations.append(f"leak: {side.name} still has a deadline at {eng.next_deadline()}")


def _name(error: type[ChannelError] | None) -> str:
    return error.__name__ if error else "no error and None"


def draw(
    seed: int, *, actions: int = 40, loss: float | None = None, flow_control: bool | None = None
) -> tuple[NetConfig, list[Action]]:
    """The network and script a seed stands for (loss and flow control fixed if given)."""
    rng = random.Random(seed)
    net = NetConfig.random(rng, loss=loss, flow_control=flow_control)
    return net, random_script(rng, rng.randint(1, actions))


def config_for(seed: int, *, ghosts: bool = False) -> EngineConfig:
    """The engine configuration a seed stands for: timings, sometimes a server that may process 0-RTT at once;
    with `ghosts`, often a tiny or no discarded filter, so late messages make ghost receivers."""
    rng = random.Random(seed ^ 0x5EED)
    filter_size = rng.choice((4096, 4096, 2, 0))
    return EngineConfig(
        replay_safe_0rtt=rng.random() < 0.3,
        discarded_filter_size=filter_size if ghosts else EngineConfig.discarded_filter_size,
        ack_delay=rng.choice((0.0, 0.05, 0.05, 0.5)),
        sent_unreliable_delay=rng.choice((0.0, 0.1, 0.1)),
        nack_timeout=rng.choice((0.2, 1.0, 1.0)),
        max_receiver_queue_messages=rng.choice((10_000, 10_000, 3)),
        max_receiver_queue_bytes=rng.choice((16 * 1024 * 1024, 16 * 1024 * 1024, 3000)),
    )


def run_seed(
    seed: int,
    *,
    actions: int = 40,
    loss: float | None = None,
    flow_control: bool | None = None,
    ghosts: bool = False,
    strict: bool = False,
    factory: EngineFactory | None = None,
) -> RunResult:
    """Draw a network, a script and a configuration from `seed`, run and check them."""
    net, script = draw(seed, actions=actions, loss=loss, flow_control=flow_control)
    config = config_for(seed, ghosts=ghosts)
    if net.datagram_dup:  # QUIC never delivers a datagram twice; only the discarded filter saves a duplicate
        config = dataclasses.replace(config, discarded_filter_size=EngineConfig.discarded_filter_size)
    return Run(seed, script, net, factory, config=config, strict=strict).execute()


def signature(violation: str) -> str:
    """A violation with its numbers blanked, to compare kinds across shrinking."""
    return re.sub(r"\d+(\.\d+)?", "#", violation)


def shrink(result: RunResult, factory: EngineFactory | None = None, *, budget: int = 300) -> RunResult:
    """Delete actions (and zero their delays) while a violation of the same kind as the first remains."""
    want = signature(result.violations[0])
    best = result
    tries = 0

    def still_fails(script: list[Action]) -> RunResult | None:
        nonlocal tries
        tries += 1
        r = Run(result.seed, script, result.net, factory, config=result.config, strict=result.strict).execute()
        return r if any(signature(v) == want for v in r.violations) else None

    chunk = max(1, len(best.script) // 2)
    while chunk >= 1 and tries < budget:
        i = 0
        while i < len(best.script) and tries < budget:
            cand = best.script[:i] + best.script[i + chunk :]
            r = still_fails(cand)
            if r is not None:
                best = r
            else:
                i += chunk
        chunk //= 2
    return best

"""A random application driver for two engines under a random network, with an invariant checker.

`run_seed(seed)` draws a network (NetConfig.random) and a script
(random_script) from the seed, plays the script on both apps in the
simulator, then runs the finale: repeatedly drain every receiver (adopting
attached handles) and finish every sender until nothing moves; checks
liveness (every handle ended, every message resolved and delivered or
excused by the app's own cancel/close/drop) and the ledger's safety rules;
drops every handle and checks that neither engine keeps channel, link or
timer state. Any exception escaping an engine is a violation. `shrink`
deletes actions while the same kind of violation persists. What each
action does, and what each application holds, is actions.py's; the run
here owns the simulation, the ledger, the event handling and the checks.
"""

from __future__ import annotations

import dataclasses
import random
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from ..core.app import (
    AppEvent,
    ConnectionClosed,
    Delivery,
    HeadersReceived,
    MessageAvailable,
    MessagesAcked,
    MessagesNacked,
    ReceiverEnded,
    SenderEnded,
    WritableAgain,
)
from ..core.config import EngineConfig
from ..errors import EndReason
from ..wire.channel_id import Side
from .actions import Actions, App
from .endpoint import DrivenEngine
from .ledger import Ledger
from .netconfig import NetConfig
from .script import Action, random_script
from .sim import Simulation, SimulationError

LEAK_KEYS = ("senders", "receivers", "links", "timers", "pending_receivers", "held_bytes", "channel_map")
"""state_sizes() keys that must be zero once every handle is gone; `streams` may keep the connection control stream."""


EngineFactory = Callable[[Side], DrivenEngine]


def default_factory(config: EngineConfig | None = None) -> EngineFactory:
    """Real engines with `config`."""
    from ..core.engine import Engine

    def make(side: Side) -> DrivenEngine:
        return cast(DrivenEngine, Engine(side, headers=[("driver", side.name.encode())], config=config))

    return make


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
        self.apps = {Side.CLIENT: App(Side.CLIENT), Side.SERVER: App(Side.SERVER)}
        self.connection_lost = False
        self.closed_by_driver = False
        self._misuse_seen = 0
        self._overcredit_seen = 0
        self.stats: dict[str, int] = {"sent": 0, "delivered": 0, "acked": 0, "nacked": 0, "skipped": 0}
        self.actions = Actions(self)
        """What the two applications do (actions.py)."""

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
                self.actions.adopt_sender(Side.CLIENT, ep, "E")
            self._absorb()
            for action in self.script:
                self._advance(action.dt)
                self.actions.act(action)
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
                    self.actions.adopt_receiver(side, ev.entrypoint, "E")
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
                    while h in app.receivers and self.actions.take(app, h, False):
                        moved = True
                for h in list(app.senders):
                    if app.sender_state[h] == "open":
                        self.actions.finish(app, h)
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
                self.actions.drop_sender(app, h)
            for h in list(app.receivers):
                self.actions.drop_receiver(app, h)
        self._absorb()
        self.sim.run_until_idle(max_time=600)
        self._absorb()
        self._check_leaks()

    def _check_ends(self) -> None:
        for app in self.apps.values():
            who = app.side.name
            eng = self.sim.endpoint(app.side).engine
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
            eng = self.sim.endpoint(side).engine
            sizes = eng.state_sizes()
            leaks = {k: sizes.get(k, 0) for k in LEAK_KEYS if sizes.get(k, 0)}
            if sizes.get("streams", 0) > (0 if self.connection_lost else 1):
                leaks["streams"] = sizes["streams"]
            if leaks:
                self.violations.append(f"leak: {side.name} state_sizes {leaks} after every handle was dropped")
            if eng.next_deadline() is not None:
                self.violations.append(f"leak: {side.name} still has a deadline at {eng.next_deadline()}")


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

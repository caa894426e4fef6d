"""The two applications of a driven run: what each holds, and each action a script can take.

A script (script.py) is a list of actions, each naming a kind (send,
finish, cancel, take, drain, close a receiver, drop a handle, poke an
ended one, close the connection), a side and a pick among that side's
handles. `act` tries the named side's application first, then the other's
(a pick with no handle to act on is skipped), calls the engine as an
application would, and tells the ledger what the application did: every
send with its payload (tagged so a delivery names its channel and number),
every channel it creates, and what the application gave up (a cancel, a
drop, a close) so later losses are excused. `take`, `finish` and the drops
are also what the finale of a run (driver.py) uses.

Actions owns each application's view (`App`); the run (driver.py) owns the
simulation, the ledger and the counters, which it lends through RunHost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..core.app import AttachKind, Delivery
from ..core.config import EngineConfig
from ..errors import ERROR_FOR_REASON, ChannelClosed, ChannelError, EndReason, LimitExceeded, WouldBlock
from ..wire.channel_id import Side
from .endpoint import DrivenEngine
from .ledger import Ledger, encode_payload
from .netconfig import NetConfig
from .script import Action, ActionKind
from .sim import Simulation


@dataclass
class App:
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



def _name(error: type[ChannelError] | None) -> str:
    return error.__name__ if error else "no error and None"


class RunHost(Protocol):
    """What the actions need of their run (driver.py's Run is one)."""

    sim: Simulation[DrivenEngine]
    ledger: Ledger
    apps: dict[Side, App]
    stats: dict[str, int]
    net: NetConfig
    config: EngineConfig | None
    strict: bool
    connection_lost: bool
    closed_by_driver: bool

    @property
    def violations(self) -> list[str]:
        """Everything found so far."""

    def _absorb(self) -> None: ...


class Actions:
    """Each action of a script, on the run's two applications."""

    def __init__(self, run: RunHost) -> None:
        self._run = run
        self._tags = 0

    def adopt_sender(self, side: Side, handle: int, tag: str) -> None:
        app = self._run.apps[side]
        self._run.ledger.bind_sender(side, handle, tag)
        app.senders.append(handle)
        app.sender_state[handle] = "ended" if handle in app.seen_sender_end else "open"

    def adopt_receiver(self, side: Side, handle: int, tag: str) -> None:
        app = self._run.apps[side]
        self._run.ledger.bind_receiver(side, handle, tag)
        app.receivers.append(handle)
        if handle in app.seen_receiver_end:
            self._run.ledger.channels[tag].receiver_end = app.seen_receiver_end[handle]

    def _new_tag(self) -> str:
        self._tags += 1
        return f"c{self._tags}"

    @staticmethod
    def _pick(handles: list[int], pick: int) -> int | None:
        return handles[-1 - pick % len(handles)] if handles else None

    def act(self, a: Action) -> None:
        if self._run.connection_lost and a.kind is not ActionKind.DRAIN:
            self._run.stats["skipped"] += 1
            return
        do = getattr(self, f"_do_{a.kind.value}")
        if not do(self._run.apps[a.side], a) and not do(self._run.apps[a.side.other], a):
            self._run.stats["skipped"] += 1  # neither app had a handle to do it with

    def _engine(self, side: Side) -> DrivenEngine:
        return self._run.sim.endpoint(side).engine

    def _do_send(self, app: App, a: Action) -> bool:
        live = [h for h in app.senders if app.sender_state[h] == "open" and h not in app.blocked]
        h = self._pick(live, a.pick)
        if h is None:
            return False
        tag = self._run.ledger.sender_tag(app.side, h)
        assert tag is not None
        rec = self._run.ledger.channels[tag]
        if rec.oneshot and rec.sends:
            return False
        return self._send(app, h, tag, a.delivery, a.attach, a.pad)

    def _send(self, app: App, h: int, tag: str, delivery: Delivery, attach: Sequence[AttachKind], pad: int) -> bool:
        rec = self._run.ledger.channels[tag]
        tags = [self._new_tag() for _ in attach]
        if self._run.net.stream_window is not None:  # a frame bigger than the window could never arrive
            pad = min(pad, self._run.net.stream_window - 100)
        if self._run.config is not None:  # nor one bigger than a receiver queue (the peer closes the connection)
            pad = min(pad, self._run.config.max_receiver_queue_bytes - 100)
        payload = encode_payload(tag, rec.sends, tags, pad)
        try:
            res = self._engine(app.side).send(h, payload, attach, delivery, now=self._run.sim.now)
        except WouldBlock:
            app.blocked.add(h)
            self._run.stats["would_block"] = self._run.stats.get("would_block", 0) + 1
            return False
        except LimitExceeded:
            limit = self._run.config.max_datagram_payload if self._run.config else EngineConfig.max_datagram_payload
            if delivery is not Delivery.UNRELIABLE or len(payload) + 64 < limit:
                raise  # only a datagram at the limit may be refused
            self._run.stats["too_big"] = self._run.stats.get("too_big", 0) + 1
            return False
        if len(res.created) != len(attach):
            self._run.violations.append(f"send created {len(res.created)} halves for {len(attach)} attachments")
        self._run.ledger.on_send(app.side, h, tag, rec.sends, delivery, res.number, self._run.sim.now)
        self._run.stats["sent"] += 1
        peer = app.side.other
        for kind, t, created in zip(attach, tags, res.created, strict=False):
            self._run.ledger.new_channel(t, peer if kind.gives_sender else app.side, kind.oneshot, (tag, rec.sends - 1))
            if kind.gives_sender:
                self.adopt_receiver(app.side, created, t)
            else:
                self.adopt_sender(app.side, created, t)
        if rec.oneshot:
            rec.finish_called = True
            app.sender_state[h] = "ended" if app.sender_state[h] == "ended" else "finishing"
        return True

    def _spare_entrypoint(self, app: App, handles: list[int], a: Action, sender: bool) -> list[int]:
        """Ending the entrypoint ends most of a script's activity: only large picks may do it."""
        if a.pick >= 4:
            return handles
        tag = self._run.ledger.sender_tag if sender else self._run.ledger.receiver_tag
        return [h for h in handles if tag(app.side, h) != "E"]

    def _do_finish(self, app: App, a: Action) -> bool:
        live = [h for h in app.senders if app.sender_state[h] == "open"]
        h = self._pick(self._spare_entrypoint(app, live, a, True), a.pick)
        if h is None:
            return False
        self.finish(app, h)
        return True

    def finish(self, app: App, h: int) -> None:
        self._engine(app.side).finish(h, now=self._run.sim.now)
        app.sender_state[h] = "ended" if app.sender_state[h] == "ended" else "finishing"
        tag = self._run.ledger.sender_tag(app.side, h)
        assert tag is not None
        self._run.ledger.channels[tag].finish_called = True

    def _do_cancel(self, app: App, a: Action) -> bool:
        live = [h for h in app.senders if app.sender_state[h] == "open"]
        h = self._pick(self._spare_entrypoint(app, live, a, True), a.pick)
        if h is None:
            return False
        self._engine(app.side).cancel(h, now=self._run.sim.now)
        app.sender_state[h] = "cancelled"
        self._abandon_sender(app, h)
        return True

    def _abandon_sender(self, app: App, h: int) -> None:
        tag = self._run.ledger.sender_tag(app.side, h)
        assert tag is not None
        rec = self._run.ledger.channels[tag]
        if not rec.finish_called:
            rec.sender_abandoned = True

    def _do_drop_sender(self, app: App, a: Action) -> bool:
        h = self._pick(self._spare_entrypoint(app, app.senders, a, True), a.pick)
        if h is None:
            return False
        self.drop_sender(app, h)
        return True

    def drop_sender(self, app: App, h: int) -> None:
        self._engine(app.side).drop_sender(h, now=self._run.sim.now)
        app.senders.remove(h)
        self._abandon_sender(app, h)
        if h not in app.seen_sender_end:
            self._run.ledger.channels[self._tag(app, h, True)].dropped_early = True

    def _do_close_receiver(self, app: App, a: Action) -> bool:
        live = [h for h in app.receivers if h not in app.seen_receiver_end and h not in app.receiver_closed]
        h = self._pick(self._spare_entrypoint(app, live, a, False), a.pick)
        if h is None:
            return False
        self._engine(app.side).close_receiver(h, now=self._run.sim.now)
        app.receiver_closed.add(h)
        self._discard_receiver(app, h)
        return True

    def _discard_receiver(self, app: App, h: int) -> None:
        tag = self._run.ledger.receiver_tag(app.side, h)
        assert tag is not None
        drained = app.seen_receiver_end.get(h) is EndReason.FINISHED and h not in app.available
        if not drained:
            self._run.ledger.channels[tag].receiver_discarded = True

    def _do_drop_receiver(self, app: App, a: Action) -> bool:
        h = self._pick(self._spare_entrypoint(app, app.receivers, a, False), a.pick)
        if h is None:
            return False
        self.drop_receiver(app, h)
        return True

    def drop_receiver(self, app: App, h: int) -> None:
        self._discard_receiver(app, h)
        self._engine(app.side).drop_receiver(h, now=self._run.sim.now)
        app.receivers.remove(h)
        if h not in app.seen_receiver_end:
            self._run.ledger.channels[self._tag(app, h, False)].dropped_early = True

    def _tag(self, app: App, h: int, sender: bool) -> str:
        tag = (self._run.ledger.sender_tag if sender else self._run.ledger.receiver_tag)(app.side, h)
        assert tag is not None
        return tag

    def _do_take(self, app: App, a: Action) -> bool:
        h = self._pick([h for h in app.receivers if h in app.available], a.pick)
        if h is None:
            return False
        self.take(app, h, a.discard)
        return True

    def _do_drain(self, app: App, a: Action) -> bool:
        h = self._pick([h for h in app.receivers if h in app.available], a.pick)
        if h is None:
            return False
        while self.take(app, h, a.discard):
            pass
        return True

    def take(self, app: App, h: int, discard: bool) -> bool:
        """Take one message from receiver `h`; False if there was none."""
        announced = h in app.available
        d = self._engine(app.side).take_message(h, now=self._run.sim.now)
        if d is None:
            app.available.discard(h)
            return False
        if not announced:
            self._run.violations.append(f"{app.side.name} receiver {h}: a message was queued without MessageAvailable")
        ended = app.seen_receiver_end.get(h)
        if ended is not None and ended is not EndReason.FINISHED:
            self._run.violations.append(f"{app.side.name} receiver {h}: message taken after it ended {ended.value}")
        self._run.stats["delivered"] += 1
        tags = self._run.ledger.on_deliver(app.side, h, d)
        for att in d.attachments:
            if not 0 <= att.index < len(tags):
                self._run.violations.append(f"attachment index {att.index} out of range")
                continue
            if att.is_sender:
                self.adopt_sender(app.side, att.handle, tags[att.index])
                if discard:
                    self.drop_sender(app, att.handle)
            else:
                self.adopt_receiver(app.side, att.handle, tags[att.index])
                if discard:
                    self.drop_receiver(app, att.handle)
        self._run._absorb()
        return True

    def _do_poke(self, app: App, a: Action) -> bool:
        """Call into a handle that is past its prime; only documented outcomes are allowed (strict runs only)."""
        if not self._run.strict:
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
            self._expect(what, "send", want, lambda: eng.send(h, b"late", (), a.delivery, now=self._run.sim.now))
            if ended is None and app.sender_state[h] == "finishing":
                self._expect(what, "cancel", ChannelClosed, lambda: eng.cancel(h, now=self._run.sim.now))
            else:  # ended: a no-op (after a completed finish, ChannelClosed is as good)
                err = ChannelClosed if ended is EndReason.FINISHED else None
                self._expect(what, "cancel", err, lambda: eng.cancel(h, now=self._run.sim.now), none_ok=True)
        else:
            ended_r = app.seen_receiver_end.get(h)
            what = f"{app.side.name} receiver {h} (ended {ended_r}, closed {h in app.receiver_closed})"
            if ended_r is not EndReason.FINISHED:
                self._expect(what, "take_message", None, lambda: eng.take_message(h, now=self._run.sim.now))
            self._expect(what, "close_receiver", None, lambda: eng.close_receiver(h, now=self._run.sim.now))
        self._run._absorb()
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
                self._run.violations.append(f"{what}: {call} raised {type(exc).__name__}, expected {_name(error)}")
            return
        if out is not None or (error is not None and not none_ok):
            self._run.violations.append(f"{what}: {call} returned {out!r:.80}, expected {_name(error)}")

    def _do_close_connection(self, app: App, a: Action) -> bool:
        """Odd picks: the transport dies under both (idle timeout); even: the app closes the connection."""
        self._run.closed_by_driver = True
        if a.pick % 2:
            self._run.sim.terminate(0, "idle timeout")
        else:
            self._engine(app.side).close(0, "driver", now=self._run.sim.now)
        return True

"""A deterministic network joining a client and a server engine under a virtual clock.

Theory of operation: a heap of (time, seq, action) holds everything in
flight: stream flushes, datagrams, resets, credit, handshake and
termination events. `step()` pumps both engines (drains their commands into
the network and their app events into logs), then runs the earliest of the
next network action and the engines' timer deadlines, setting `now` to its
time. Every random choice comes from one `random.Random(seed)` and every
iteration is in insertion order, so a seed replays exactly.

Handshake model (one-way delay d): the client completes at 2d, the server at
3d. Client stream data written before 2d arrives early if 0-RTT is
attempted and accepted; otherwise it is held and sent at 2d (aioquic
resends rejected early stream data itself), so it reaches the server once,
in order, after the server's HandshakeCompleted. Early client datagrams are
held (no 0-RTT) or dropped (0-RTT rejected). Server data never arrives
before the client completes.

The streams' model (windows, limits, resets, StopSending, credit) is
quicstreams.py's; an endpoint's state and the engine surface driven are
endpoint.py's; datagrams, the handshake, closing and the clock are here.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic

from ..core.transport import (
    CloseConnection,
    ConnectionTerminated,
    DatagramReceived,
    GrantCredit,
    HandshakeCompleted,
    ResetStream,
    SendDatagram,
    SendStreamData,
    StopSending,
    TransportCommand,
    TransportEvent,
)
from ..wire.channel_id import Side
from .endpoint import E, Endpoint
from .netconfig import NetConfig
from .quicstreams import SimStreams

DatagramPredicate = Callable[[bytes], bool]


class SimulationError(Exception):
    """The simulation cannot go on: a timer livelock, or no quiescence within the limits."""


@dataclass
class DatagramRule:
    """A one-off fault for the next datagram a side sends that matches `predicate`."""

    predicate: DatagramPredicate
    delay: float | None
    """None: drop it; otherwise deliver it this much later than normal."""


_Action = Callable[[], None]


class Simulation(Generic[E]):
    """Two engines, one virtual clock, one seeded network. See the module docstring of aqueduct.testing."""

    def __init__(
        self, client: E, server: E, net: NetConfig | None = None, *, seed: int = 0, trace: bool = False
    ) -> None:
        self.net = net or NetConfig()
        self.seed = seed
        self.rng = random.Random(seed)
        self.now = 0.0
        self.client: Endpoint[E] = Endpoint(Side.CLIENT, client)
        self.server: Endpoint[E] = Endpoint(Side.SERVER, server)
        self.stats: Counter[str] = Counter()
        self.misuse: list[str] = []
        """Transport misuse by an engine: writes after FIN/reset, wrong stream direction, oversize datagram..."""
        self.overcredit: list[str] = []
        """GrantCredit beyond the bytes a stream delivered (credit must follow consumption)."""
        self.trace: list[str] | None = [] if trace else None
        self.paused = False
        self.closing = False
        self._heap: list[tuple[float, int, _Action]] = []
        self._seq = 0
        self._rules: dict[Side, list[DatagramRule]] = {Side.CLIENT: [], Side.SERVER: []}
        self._streams = SimStreams(self)
        self._stalled_timers = 0
        d = self.net.one_way
        self.client_handshake_at = 2 * d
        self.server_handshake_at = 3 * d
        self.early_accepted = self.net.zero_rtt and self.net.accept_0rtt
        self._at(self.client_handshake_at, lambda: self._handshake(self.client))
        self._at(self.server_handshake_at, lambda: self._handshake(self.server))
        self.pump()

    # ---- public driving API ----
    def endpoint(self, side: Side) -> Endpoint[E]:
        """The endpoint of a side."""
        return self.client if side is Side.CLIENT else self.server

    def pump(self) -> None:
        """Drain both engines' commands into the network and their app events into the logs."""
        for ep in (self.client, self.server):
            for ev in ep.engine.events():
                ep.log.append((self.now, ev))
            for cmd in ep.engine.commands():
                if not ep.terminated and not self.closing:
                    self._command(ep, cmd)

    def next_time(self) -> float | None:
        """When the next step would happen, or None if idle (pumps the engines first)."""
        self.pump()
        times = [t for t in (self._next_net(), self._next_timer()[0]) if t is not None]
        return min(times) if times else None

    def step(self) -> bool:
        """Run the single next action (network delivery or timer); False if there is nothing to run."""
        self.pump()
        t_net = self._next_net()
        t_timer, ep = self._next_timer()
        if t_net is None and t_timer is None:
            return False
        if t_timer is not None and ep is not None and (t_net is None or t_timer <= t_net):
            if t_timer <= self.now:
                self._stalled_timers += 1
                if self._stalled_timers > 10_000:
                    raise SimulationError(f"{ep.side.name.lower()} timer livelock at {self.now}")
            else:
                self._stalled_timers = 0
                self.now = t_timer
            ep.engine.handle_timer(self.now)
        else:
            t, _, action = heapq.heappop(self._heap)
            if t > self.now:
                self._stalled_timers = 0
                self.now = t
            action()
        self.pump()
        return True

    def advance(self, seconds: float) -> None:
        """Run everything due within the next `seconds`, then set the clock to that time."""
        target = self.now + seconds
        while (t := self.next_time()) is not None and t <= target:
            self.step()
        self.now = max(self.now, target)
        self.pump()

    def run_until_idle(self, *, max_time: float = 3600.0, max_steps: int = 1_000_000) -> float:
        """Step until nothing is in flight and no timer is set; return the time. Raises SimulationError if not idle
        within `max_time` seconds from now or `max_steps` steps (paused or held traffic does not count as busy)."""
        limit = self.now + max_time
        for _ in range(max_steps):
            t = self.next_time()
            if t is None:
                return self.now
            if t > limit:
                raise SimulationError(f"not idle by t={limit} (next action at {t})")
            self.step()
        raise SimulationError(f"not idle after {max_steps} steps (t={self.now})")

    def run_until(self, predicate: Callable[[], bool], *, max_time: float = 3600.0) -> bool:
        """Step until `predicate()` holds (True) or the network is idle or `max_time` passes (False)."""
        limit = self.now + max_time
        self.pump()
        while not predicate():
            t = self.next_time()
            if t is None or t > limit:
                return False
            self.step()
        return True

    # ---- scripting hooks ----
    def hold_stream(self, sender: Side, stream_id: int) -> None:
        """Stop delivering what `sender` writes on `stream_id` until `release_stream`."""
        self._streams.pipe(sender, stream_id).held = True

    def release_stream(self, sender: Side, stream_id: int) -> None:
        """Let a held stream flow again."""
        pipe = self._streams.pipe(sender, stream_id)
        pipe.held = False
        self._streams.flush_at(sender, pipe, self.now)

    def drop_next_datagram(self, sender: Side, predicate: DatagramPredicate | None = None) -> None:
        """Drop the next datagram `sender` sends (that matches `predicate`)."""
        self._rules[sender].append(DatagramRule(predicate or (lambda _: True), None))

    def delay_next_datagram(self, sender: Side, seconds: float, predicate: DatagramPredicate | None = None) -> None:
        """Delay the next datagram `sender` sends (that matches `predicate`) by `seconds` more than normal."""
        self._rules[sender].append(DatagramRule(predicate or (lambda _: True), seconds))

    def pause(self) -> None:
        """Freeze all network delivery (timers still run) until `resume`."""
        self.paused = True

    def resume(self) -> None:
        """Deliver again; what fell due while paused goes first, in order."""
        self.paused = False

    def set_rtt(self, rtt: float) -> None:
        """Report a new RTT estimate to both engines."""
        for ep in (self.client, self.server):
            if not ep.terminated:
                ep.engine.update_rtt(rtt)
        self.pump()

    def terminate(self, error_code: int = 0, reason: str = "idle timeout") -> None:
        """The QUIC connection dies under both engines (e.g. idle timeout): both get ConnectionTerminated now."""
        self._start_close()
        for ep in (self.client, self.server):
            self._terminate_at(ep, self.now, ConnectionTerminated(error_code, reason, by_peer=False))

    def held_bytes(self, sender: Side, stream_id: int | None = None) -> int:
        """Bytes `sender` wrote that the receive window holds back (on one stream, or all)."""
        pipes = self._streams.pipes.items()
        return sum(p.window_blocked for (s, sid), p in pipes if s is sender and stream_id in (None, sid))

    def undelivered_bytes(self, sender: Side, stream_id: int | None = None) -> int:
        """Bytes `sender` wrote that the peer has not received yet (on one stream, or all)."""
        pipes = self._streams.pipes.items()
        return sum(p.undelivered for (s, sid), p in pipes if s is sender and stream_id in (None, sid))

    def streams(self, sender: Side) -> list[int]:
        """Stream IDs `sender` has written on or reset, in order of first use."""
        return [sid for (s, sid) in self._streams.pipes if s is sender]

    # ---- internals: scheduling ----
    def _at(self, t: float, action: _Action) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, action))

    def _next_net(self) -> float | None:
        if self.paused or not self._heap:
            return None
        return max(self._heap[0][0], self.now)

    def _next_timer(self) -> tuple[float | None, Endpoint[E] | None]:
        best: tuple[float | None, Endpoint[E] | None] = (None, None)
        for ep in (self.client, self.server):
            if ep.terminated:
                continue
            d = ep.engine.next_deadline()
            if d is not None and (best[0] is None or d < best[0]):
                best = (max(d, self.now), ep)
        return best

    def _delay(self) -> float:
        delay = self.net.one_way + self.rng.uniform(0.0, self.net.jitter)
        if self.net.late and self.rng.random() < self.net.late:
            self.stats["late"] += 1
            delay += self.rng.uniform(0.0, self.net.late_delay)
        return delay

    def _log(self, text: str) -> None:
        if self.trace is not None:
            self.trace.append(f"{self.now:.6f} {text}")

    def _peer(self, ep: Endpoint[E]) -> Endpoint[E]:
        return self.server if ep is self.client else self.client

    def _deliver(self, ep: Endpoint[E], event: TransportEvent) -> None:
        if ep.terminated:
            return
        if isinstance(event, ConnectionTerminated):
            ep.terminated = True
        ep.received += 1
        self._log(f"-> {ep.side.name[0]} {event!r:.200}")
        ep.engine.handle_event(event, self.now)

    def _departure(self, side: Side) -> float:
        """When data handed over now leaves `side` (early client data waits for the handshake unless 0-RTT)."""
        if side is Side.CLIENT and not self.client.handshake_done and not self.early_accepted:
            return max(self.now, self.client_handshake_at)
        return self.now

    def _arrival_floor(self, side: Side) -> float:
        """The earliest time data from `side` can be delivered (not before the receiver's handshake, unless 0-RTT)."""
        if side is Side.SERVER:
            return self.client_handshake_at
        if self.early_accepted and self.now < self.client_handshake_at:
            return 0.0
        return self.server_handshake_at

    # ---- internals: the handshake ----
    def _handshake(self, ep: Endpoint[E]) -> None:
        if ep.terminated:
            return
        ep.handshake_done = True
        ep.engine.update_rtt(self.net.rtt)
        self._deliver(
            ep, HandshakeCompleted(early_data_accepted=self.early_accepted, session_resumed=self.net.zero_rtt)
        )

    # ---- internals: commands ----
    def _command(self, ep: Endpoint[E], cmd: TransportCommand) -> None:
        self.stats["commands"] += 1
        self._log(f"{ep.side.name[0]} {cmd!r:.200}")
        if isinstance(cmd, SendStreamData):
            self._streams.send(ep, cmd)
        elif isinstance(cmd, ResetStream):
            self._streams.reset(ep, cmd)
        elif isinstance(cmd, StopSending):
            self._streams.stop_sending(ep, cmd)
        elif isinstance(cmd, SendDatagram):
            self._send_datagram(ep, cmd)
        elif isinstance(cmd, GrantCredit):
            self._streams.grant_credit(ep, cmd)
        elif isinstance(cmd, CloseConnection):
            self._close(ep, cmd)
        else:  # pragma: no cover - the union is exhaustive
            self.misuse.append(f"{ep.side.name}: unknown command {cmd!r}")

    def _send_datagram(self, ep: Endpoint[E], cmd: SendDatagram) -> None:
        data = cmd.data
        if len(data) > self.net.max_datagram_size:
            self.misuse.append(f"{ep.side.name}: datagram of {len(data)} bytes")
            return
        self.stats["datagrams_sent"] += 1
        extra = 0.0
        for rule in self._rules[ep.side]:
            if rule.predicate(data):
                self._rules[ep.side].remove(rule)
                if rule.delay is None:
                    self.stats["datagrams_dropped"] += 1
                    return
                extra = rule.delay
                break
        early = ep.side is Side.CLIENT and not self.client.handshake_done
        if early and self.net.zero_rtt and not self.net.accept_0rtt:
            self.stats["datagrams_dropped"] += 1
            self.stats["datagrams_0rtt_dropped"] += 1
            return
        if self.rng.random() < self.net.datagram_loss:
            self.stats["datagrams_dropped"] += 1
            return
        copies = 2 if self.rng.random() < self.net.datagram_dup else 1
        self.stats["datagrams_duplicated"] += copies - 1
        peer = self._peer(ep)
        for _ in range(copies):
            delay = self._delay() + extra
            if self.rng.random() < self.net.datagram_reorder:
                self.stats["datagrams_reordered"] += 1
                delay += self.rng.uniform(0.0, self.net.reorder_delay)
            ready = max(self._departure(ep.side) + delay, self._arrival_floor(ep.side))
            self._at(ready, lambda: self._arrive_datagram(peer, data))

    def _arrive_datagram(self, ep: Endpoint[E], data: bytes) -> None:
        self.stats["datagrams_delivered"] += 1
        self._deliver(ep, DatagramReceived(data))

    def _start_close(self) -> None:
        self.closing = True
        self._heap.clear()

    def _close(self, ep: Endpoint[E], cmd: CloseConnection) -> None:
        self._start_close()
        self._terminate_at(ep, self.now, ConnectionTerminated(cmd.error_code, cmd.reason, by_peer=False))
        self._terminate_at(self._peer(ep), self.now + self._delay(), ConnectionTerminated(cmd.error_code, cmd.reason))

    def _terminate_at(self, ep: Endpoint[E], t: float, event: ConnectionTerminated) -> None:
        self._at(t, lambda: self._deliver(ep, event))

    # ---- internals: stream delivery ----

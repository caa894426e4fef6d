"""Random channel trees over real connections, fed to the one ledger, which checks nothing promised was lost.

`TreeTraffic` drives both ends of connections that live in one process.
Every channel gets an id (`cid`); a message is `{"c": cid, "s": seq, "h":
[[child_cid, half], ...]}`. Whoever holds a sender *produces*: a seeded
number of messages in random delivery modes, reliable ones sometimes
carrying a new channel's sender or receiver (a tree, depth-limited), then a
finish or (sometimes) a cancel. Whoever holds a receiver *drains* it,
sometimes closing it early, and serves every half that arrives the same way.

`TrafficLog` records, per channel: what the producer sent (seq -> delivery and
message number), what the draining application got, how each end ended,
and the acks/nacks the sending engine reported (tapped from the engine's
events through `tap(conn)`). When both ends are done, `check(rec)` feeds
the channel into the one ledger (`aqueduct.testing.ledger.Ledger`, the
simulator's too), which applies the rules; once a cleanly finished
channel's acks are in, `settle` feeds them and asks the ledger whether the
channel settled. Violations are the ledger's, collected as strings.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from aqueduct.api.connection import Connection, link_of
from aqueduct.api.halves import Receiver, Sender, channel
from aqueduct.api.halves.wiring import open_handle
from aqueduct.api.link import ConnectionLink
from aqueduct.core.app import AppEvent, Delivery, MessagesAcked, MessagesNacked
from aqueduct.errors import ChannelError, ChannelFinished, EndReason
from aqueduct.testing.ledger import Ledger

HandleKey = tuple[int, int]
"""(id of the Connection, engine sender handle)."""


def _reliable(d: Delivery) -> bool:
    return d is not Delivery.UNRELIABLE


@dataclass
class ChannelRecord:
    """Everything known about one channel."""

    cid: int
    sent: dict[int, tuple[Delivery, int]] = field(default_factory=dict)
    """seq -> (delivery, message number in its space)."""
    received: list[tuple[int, Delivery, int]] = field(default_factory=list)
    """(seq, delivery, number) in the order the application got them."""
    sender_key: HandleKey | None = None
    sender_conn: ConnectionLink | None = None
    sender_end: EndReason | None = None
    receiver_end: EndReason | None = None
    uncertain: bool = False
    """A send failed with the connection lost: whether it went out is unknown."""
    closed_early: bool = False
    parent: tuple[int, int] | None = None
    """(cid, seq) of the message that carried this channel's half, None for a root."""
    served_by_peer: bool = False
    """The half that travelled was taken up by the peer's application."""
    fed_nacks: dict[bool, set[int]] = field(default_factory=lambda: {True: set(), False: set()})
    """Nacks already given to the ledger."""

    @property
    def tag(self) -> str:
        """The channel's name in the ledger."""
        return str(self.cid)

    @property
    def party(self) -> Any:
        """Who sent on it, for the ledger: the sending connection (a channel never bound has its own)."""
        return self.sender_key[0] if self.sender_key is not None else f"unbound {self.cid}"

    @property
    def handle(self) -> int:
        """The sending engine's handle (0 if never bound)."""
        return self.sender_key[1] if self.sender_key is not None else 0


@dataclass
class TrafficLog:
    """Channels, acks and nacks as the traffic saw them, checked by the ledger."""

    channels: dict[int, ChannelRecord] = field(default_factory=dict)
    acks: dict[HandleKey, dict[bool, set[int]]] = field(default_factory=dict)
    nacks: dict[HandleKey, dict[bool, set[int]]] = field(default_factory=dict)
    ledger: Ledger = field(default_factory=Ledger)
    messages_sent: int = 0
    messages_received: int = 0
    checked: int = 0
    acks_checked: int = 0
    acks_unsettled: int = 0
    """Channels whose connection died before their final acks arrived."""
    ends: dict[str, int] = field(default_factory=dict)
    phase: str = ""
    """A label of what the run is doing now, quoted in violations."""
    _next_cid: int = 0
    _changed: dict[HandleKey, asyncio.Event] = field(default_factory=dict)

    @property
    def violations(self) -> list[str]:
        """What the ledger found (a run may add its own)."""
        return self.ledger.violations

    def new_channel(self) -> ChannelRecord:
        """A fresh channel record."""
        self._next_cid += 1
        rec = ChannelRecord(self._next_cid)
        self.channels[rec.cid] = rec
        return rec

    def forget(self, rec: ChannelRecord) -> None:
        """Drop a checked channel's records (keeps a long run's memory flat)."""
        self.channels.pop(rec.cid, None)
        self.ledger.forget_channel(rec.tag)
        if rec.sender_key is not None:
            self.acks.pop(rec.sender_key, None)
            self.nacks.pop(rec.sender_key, None)

    def forget_connection(self, conn: Connection[Any]) -> None:
        """Drop every ack record of a finished connection."""
        for table in (self.acks, self.nacks):
            for k in [k for k in table if k[0] == id(link_of(conn))]:
                del table[k]

    def tap(self, conn: Connection[Any]) -> None:
        """Record the acks and nacks `conn`'s engine reports, then pass its events on as before."""
        proto = link_of(conn).protocol
        inner = proto.listener
        key = id(link_of(conn))

        def listener(events: list[AppEvent]) -> None:
            for ev in events:
                if isinstance(ev, MessagesAcked | MessagesNacked):
                    table = self.acks if isinstance(ev, MessagesAcked) else self.nacks
                    table.setdefault((key, ev.sender), {True: set(), False: set()})[ev.reliable].update(
                        range(ev.first, ev.stop)
                    )
                    changed = self._changed.get((key, ev.sender))
                    if changed is not None:
                        changed.set()
            if inner is not None:
                inner(events)

        proto.listener = listener

    def _space(self, table: dict[HandleKey, dict[bool, set[int]]], rec: ChannelRecord, reliable: bool) -> set[int]:
        if rec.sender_key is None:
            return set()
        return table.get(rec.sender_key, {}).get(reliable, set())

    def check(self, rec: ChannelRecord) -> None:
        """Check one finished channel: feed its sends, the nacks so far and its deliveries to the ledger.

        The ledger's rules then cover: no message delivered twice; every delivered message was sent,
        with the number and reliability it was sent with; ordered messages in send order; no message
        nacked so far was delivered. If the receiver saw the finish: every reliable message delivered.
        (Acks: see `settle`.)
        """
        self.checked += 1
        key = f"{rec.sender_end.value if rec.sender_end else '?'}/{rec.receiver_end.value if rec.receiver_end else '?'}"
        self.ends[key] = self.ends.get(key, 0) + 1
        led, tag, party = self.ledger, rec.tag, rec.party
        led.new_channel(tag, party, oneshot=False)
        for seq, (delivery, number) in sorted(rec.sent.items()):
            led.on_send(party, rec.handle, tag, seq, delivery, number)
        sent = {reliable: {n for d, n in rec.sent.values() if _reliable(d) == reliable} for reliable in (True, False)}
        # nacks of messages whose send failed (connection lost) are no one's business here
        self._feed(rec, self.nacks, sent, ack=False)
        for seq, delivery, number in rec.received:
            led.on_delivery(party, tag, seq, delivery, number)
        if rec.receiver_end is EndReason.FINISHED and not rec.uncertain:
            led.check_all_reliable_delivered(tag)

    def _feed(self, rec: ChannelRecord, table: dict[HandleKey, dict[bool, set[int]]],
              only: dict[bool, set[int]] | None, ack: bool) -> None:
        """Give the ledger the channel's acks (or its nacks not given yet), limited to `only` if given."""
        for reliable in (True, False):
            numbers = self._space(table, rec, reliable)
            if only is not None:
                numbers = numbers & only[reliable]
            if not ack:
                numbers = numbers - rec.fed_nacks[reliable]
                rec.fed_nacks[reliable] |= numbers
            for n in sorted(numbers):
                self.ledger.on_acknack(rec.party, rec.handle, reliable, n, n + 1, ack)

    def wants_acks(self, rec: ChannelRecord) -> bool:
        """Whether both ends finished cleanly, so every message must end up acked or nacked."""
        return (rec.receiver_end is EndReason.FINISHED and rec.sender_end is EndReason.FINISHED
                and not rec.uncertain and rec.sender_key is not None)

    def acks_settled(self, rec: ChannelRecord) -> bool:
        """Whether every sent message of the channel has been acked or nacked."""
        for reliable in (True, False):
            sent = {n for d, n in rec.sent.values() if _reliable(d) == reliable}
            if not sent <= self._space(self.acks, rec, reliable) | self._space(self.nacks, rec, reliable):
                return False
        return True

    def check_acks(self, rec: ChannelRecord) -> None:
        """Both ends finished: the ledger gets every ack and the nacks it has not seen, then checks that
        every reliable message was acked and every unreliable one acked or nacked, not both, acked
        exactly when the application got it (and nothing acked or nacked that was never sent)."""
        self._feed(rec, self.nacks, None, ack=False)
        self._feed(rec, self.acks, None, ack=True)
        self.ledger.check_settled(rec.tag)
        self.acks_checked += 1

    async def settle(self, rec: ChannelRecord, conn: ConnectionLink, guard: float) -> None:
        """Wait (event-driven) until the channel's acks are all in, then check them.

        The sender ends when its finish is sent; acks may still be on the way. If the sender's
        connection dies first they never come, which is no violation.
        """
        assert rec.sender_key is not None
        changed = self._changed.setdefault(rec.sender_key, asyncio.Event())
        lost: asyncio.Future[Any] = asyncio.ensure_future(asyncio.shield(conn.closed))
        try:
            async with asyncio.timeout(guard):
                while not self.acks_settled(rec) and not conn.is_closed:
                    changed.clear()
                    wake: asyncio.Future[Any] = asyncio.ensure_future(changed.wait())
                    await asyncio.wait([wake, lost], return_when=asyncio.FIRST_COMPLETED)
                    wake.cancel()
        except TimeoutError:
            self.violations.append(f"channel {rec.cid}: acks incomplete {guard} s after both ends finished")
            return
        finally:
            lost.cancel()
            self._changed.pop(rec.sender_key, None)
        if self.acks_settled(rec):
            self.check_acks(rec)
        else:
            self.acks_unsettled += 1


@dataclass(frozen=True)
class TrafficShape:
    """How random the trees are."""

    max_messages: int = 8
    max_depth: int = 2
    attach_probability: float = 0.25
    unreliable_share: float = 0.3
    unordered_share: float = 0.2
    cancel_probability: float = 0.1
    close_early_probability: float = 0.05
    guard: float = 60.0
    """Longest a channel end may take after its peer is done before it counts as a hang."""


class TreeTraffic:
    """Produces and drains random channel trees, recording into a TrafficLog."""

    def __init__(self, log: TrafficLog, seed: int, shape: TrafficShape | None = None) -> None:
        self.log = log
        self.shape = shape or TrafficShape()
        self.seed = seed
        self.tasks: set[asyncio.Task[None]] = set()
        self._pending: dict[int, int] = {}

    def _rng(self, cid: int, role: str) -> random.Random:
        return random.Random(f"{self.seed}:{cid}:{role}")

    def spawn(self, coro: Coroutine[Any, Any, None], name: str | None = None) -> asyncio.Task[None]:
        """Run a coroutine as a tracked task."""
        task = asyncio.ensure_future(coro)
        if name is not None:
            task.set_name(name)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def root(self, entry: Sender[Any]) -> int:
        """Start one tree: a reliable message on `entry` carrying a new channel's half; returns its cid."""
        rec, half = self._child(self._rng(0, f"root{self.log._next_cid}"), depth=0)
        await entry.send({"c": 0, "s": 0, "h": [[rec.cid, half]]})
        return rec.cid

    async def serve_entry(self, rx: Receiver[Any]) -> None:
        """Serve the trees arriving on an entrypoint receiver until it ends (not itself checked)."""
        with contextlib.suppress(ChannelError):
            while True:
                self.serve((await rx.recv_message()).value, 0)

    def _child(
        self, rng: random.Random, depth: int, parent: tuple[int, int] | None = None
    ) -> tuple[ChannelRecord, Sender[Any] | Receiver[Any]]:
        """A new channel; one half goes to the peer, we serve the other."""
        rec = self.log.new_channel()
        rec.parent = parent
        self._pending[rec.cid] = 2
        tx, rx = channel()
        if rng.random() < 0.5:
            self.spawn(self.drain(rx, rec, depth), f"drain {rec.cid} (local)")
            return rec, tx
        self.spawn(self.produce(tx, rec, depth), f"produce {rec.cid} (local)")
        return rec, rx

    def serve(self, msg: Any, depth: int) -> None:
        """Serve every half a received message carries."""
        for cid, half in msg.get("h", ()):
            rec = self.log.channels[cid]
            rec.served_by_peer = True
            if isinstance(half, Sender):
                self.spawn(self.produce(half, rec, depth + 1), f"produce {rec.cid} (received)")
            else:
                self.spawn(self.drain(half, rec, depth + 1), f"drain {rec.cid} (received)")

    def _done(self, rec: ChannelRecord) -> None:
        self._pending[rec.cid] -= 1
        if self._pending[rec.cid] == 0:
            self.log.check(rec)
            if self.log.wants_acks(rec) and rec.sender_conn is not None:
                self.spawn(self._settle(rec, rec.sender_conn))
            else:
                self._forget(rec)

    async def _settle(self, rec: ChannelRecord, conn: ConnectionLink) -> None:
        try:
            await self.log.settle(rec, conn, self.shape.guard)
        finally:
            self._forget(rec)

    def _forget(self, rec: ChannelRecord) -> None:
        del self._pending[rec.cid]
        self.log.forget(rec)

    @property
    def open_channels(self) -> int:
        """Channels not yet checked (an end still running, or one whose half never reached its peer)."""
        return len(self._pending)

    def describe(self, rec: ChannelRecord) -> str:
        """A channel's state and its parent's, for a violation report."""
        out = (f"[{self.log.phase}] sent {len(rec.sent)} got {len(rec.received)} ends "
               f"{rec.sender_end}/{rec.receiver_end} served_by_peer={rec.served_by_peer} parent={rec.parent}")
        if rec.parent is not None:
            p = self.log.channels.get(rec.parent[0])
            if p is not None:
                got = [s for s, _, _ in p.received]
                out += (f"; parent sent {sorted(p.sent)} got {got} ends {p.sender_end}/{p.receiver_end} "
                        f"closed_early={p.closed_early}")
            else:
                out += "; parent already checked"
        return out

    def finalize_orphans(self) -> int:
        """Check the channels whose other half never arrived (its message was lost, refused or never sent).

        Call when no task is running; returns how many there were.
        """
        orphans = [self.log.channels[cid] for cid in self._pending]
        for rec in orphans:
            self.log.check(rec)
            self._forget(rec)
        return len(orphans)

    async def produce(self, tx: Sender[Any], rec: ChannelRecord, depth: int) -> None:
        """Send a random batch on `tx`, then finish or cancel; record its end."""
        shape, rng = self.shape, self._rng(rec.cid, "produce")
        counts = {True: 0, False: 0}
        try:
            for seq in range(rng.randint(0, shape.max_messages)):
                r = rng.random()
                delivery = (Delivery.UNRELIABLE if r < shape.unreliable_share else
                            Delivery.UNORDERED if r < shape.unreliable_share + shape.unordered_share else
                            Delivery.ORDERED)
                halves: list[list[Any]] = []
                if (delivery is not Delivery.UNRELIABLE and depth < shape.max_depth
                        and rng.random() < shape.attach_probability):
                    child, half = self._child(rng, depth + 1, (rec.cid, seq))
                    halves.append([child.cid, half])
                reliable = delivery is not Delivery.UNRELIABLE
                rec.sent[seq] = (delivery, counts[reliable])
                try:
                    await tx.send({"c": rec.cid, "s": seq, "h": halves}, mode=delivery)
                except BaseException:
                    del rec.sent[seq]
                    raise
                finally:
                    link, handle = link_of(tx), open_handle(tx)
                    if rec.sender_key is None and link is not None and handle is not None:
                        rec.sender_key = (id(link), handle)
                        assert isinstance(link, ConnectionLink)
                        rec.sender_conn = link
                counts[reliable] += 1
                self.log.messages_sent += 1
            if rng.random() < shape.cancel_probability:
                tx.cancel()
                rec.sender_end = EndReason.CANCELLED
            else:
                await tx.finish()
                rec.sender_end = await asyncio.wait_for(tx.ended(), shape.guard)
        except ChannelError as err:
            rec.sender_end = err.reason
            rec.uncertain |= err.reason is EndReason.CONNECTION_LOST
        except TimeoutError:
            self.log.violations.append(f"channel {rec.cid}: sender end not reported within {shape.guard} s")
        finally:
            self._done(rec)

    async def drain(self, rx: Receiver[Any], rec: ChannelRecord, depth: int) -> None:
        """Receive until the end (or close early), serving attached halves; record what came."""
        shape, rng = self.shape, self._rng(rec.cid, "drain")
        close_after = rng.randint(0, shape.max_messages) if rng.random() < shape.close_early_probability else None
        try:
            while True:
                if close_after is not None and len(rec.received) >= close_after:
                    rx.close()
                    rec.closed_early = True
                    rec.receiver_end = EndReason.CLOSED
                    return
                try:
                    msg = await asyncio.wait_for(rx.recv_message(), shape.guard)
                except ChannelFinished:
                    rec.receiver_end = EndReason.FINISHED
                    return
                value = msg.value
                rec.received.append((value["s"], msg.delivery, msg.number))
                self.log.messages_received += 1
                self.serve(value, depth)
        except ChannelError as err:
            rec.receiver_end = err.reason
        except TimeoutError:
            self.log.violations.append(f"channel {rec.cid}: no message or end within {shape.guard} s; "
                                          f"{self.describe(rec)}")
            with contextlib.suppress(ChannelError):
                rx.close()
        finally:
            self._done(rec)

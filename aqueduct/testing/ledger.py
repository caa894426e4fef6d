"""The ledger: every message sent, its acks and nacks, its deliveries, and the rules they must keep.

One ledger serves both checkers: the simulator's random two-app driver (driver.py) and the random
channel trees over real connections (tests/harness/traffic.py, which records what its applications
did and feeds it in when a channel is done).  A message is named by its channel's tag and a
per-channel counter `k`; the engine numbers it per sender handle and reliability, and acks and nacks
come by those numbers.  Who holds a handle (a `Party`) is a `Side` in the simulator and a connection
over real ones.

Safety rules are checked as events come (`violations` grows): a number is never reused, an ack or
nack names a message that was sent and no message is both acked and nacked; a delivery is of a sent
message, at most once, with the number and reliability it was sent with, ordered ones in send order,
never one that was nacked.  The simulator's payloads carry their tag, counter and the tags of the
channels they attach (`encode_payload`), so a delivery is matched to its send without trusting the
engine.  Rules that need quiescence: `final_check` (the simulator: every message resolved and either
delivered or excused by something the application itself did (cancel, drop, close); end reasons have
causes), `check_all_reliable_delivered` (a receiver saw the finish) and `check_settled` (both ends
finished cleanly: every message resolved, reliable ones acked, unreliable ones acked exactly when
delivered).  `forget_channel` drops a checked channel, so a long run's memory stays flat.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from ..core.app import Delivered, Delivery
from ..errors import EndReason
from ..wire.channel_id import Side

Party = Hashable
"""Who holds a handle: a `Side` in the simulator, a connection's identity over real connections."""


def _who(party: Party) -> str:
    return party.name if isinstance(party, Side) else f"connection {party}"


def encode_payload(tag: str, k: int, attach_tags: list[str], pad: int) -> bytes:
    """A payload naming its channel, its counter and the channels it attaches."""
    return f"m|{tag}|{k}|{','.join(attach_tags)}|".encode() + b"." * pad


def decode_payload(payload: bytes) -> tuple[str, int, list[str]]:
    """(tag, k, attachment tags) of a payload made by `encode_payload`; ValueError if it is not one."""
    parts = payload.split(b"|")
    if len(parts) != 5 or parts[0] != b"m":
        raise ValueError(f"foreign payload {payload[:60]!r}")
    atts = parts[3].decode()
    return parts[1].decode(), int(parts[2]), atts.split(",") if atts else []


@dataclass
class SentMessage:
    """One message as the sending application saw it, and what became of it."""

    tag: str
    k: int
    side: Party
    sender: int
    delivery: Delivery
    number: int
    acked: int = 0
    nacked: int = 0
    delivered: int = 0
    sent_at: float = 0.0
    resolved_at: float | None = None
    """When the first ack or nack arrived."""

    @property
    def name(self) -> str:
        """Human name: channel tag, counter and mode."""
        return f"{self.tag}#{self.k}({self.delivery.value} n={self.number})"


@dataclass
class ChannelRecord:
    """What both applications did with one channel (keyed by the driver's tag)."""

    tag: str
    sender_side: Party
    oneshot: bool
    depth: int = 0
    """How many creating messages lie between this channel and the entrypoint."""
    created_by: tuple[str, int] | None = None
    sender: int | None = None
    receiver: int | None = None
    sender_end: EndReason | None = None
    receiver_end: EndReason | None = None
    sender_abandoned: bool = False
    """The sending app cancelled it or dropped it unfinished."""
    finish_called: bool = False
    receiver_discarded: bool = False
    """The receiving app closed or dropped its receiver."""
    dropped_early: bool = False
    """The app dropped a half before seeing it end (so no end event is due)."""
    last_ordered: int = -1
    sends: int = 0


class Ledger:
    """Sends, acks, nacks and deliveries of one run; violations as found."""

    def __init__(self) -> None:
        self.channels: dict[str, ChannelRecord] = {}
        self.messages: dict[tuple[str, int], SentMessage] = {}
        self._by_number: dict[tuple[Party, int, bool, int], SentMessage] = {}
        self._receiver_tag: dict[tuple[Party, int], str] = {}
        self._sender_tag: dict[tuple[Party, int], str] = {}
        self.violations: list[str] = []

    # ---- channels and handles ----
    def new_channel(
        self, tag: str, sender_side: Party, oneshot: bool, created_by: tuple[str, int] | None = None
    ) -> ChannelRecord:
        """Register a channel the moment the message `created_by` (channel tag, counter) creating it is sent."""
        depth = self.channels[created_by[0]].depth + 1 if created_by is not None else 0
        rec = self.channels[tag] = ChannelRecord(tag, sender_side, oneshot, depth=depth, created_by=created_by)
        return rec

    def bind_sender(self, side: Party, handle: int, tag: str) -> None:
        """The app on `side` now holds sender `handle` of channel `tag`."""
        rec = self.channels[tag]
        if side is not rec.sender_side:
            self.violations.append(f"{_who(side)} got a sender of {tag}, which sends from {_who(rec.sender_side)}")
        if rec.sender is not None:
            self.violations.append(f"channel {tag}: a second sender handle {handle} (first {rec.sender})")
        rec.sender = handle
        self._sender_tag[(side, handle)] = tag

    def bind_receiver(self, side: Party, handle: int, tag: str) -> None:
        """The app on `side` now holds receiver `handle` of channel `tag`."""
        rec = self.channels[tag]
        if side is rec.sender_side:
            self.violations.append(f"{_who(side)} got a receiver of {tag}, which it sends on")
        if rec.receiver is not None:
            self.violations.append(f"channel {tag}: a second receiver handle {handle} (first {rec.receiver})")
        rec.receiver = handle
        self._receiver_tag[(side, handle)] = tag

    def sender_tag(self, side: Party, handle: int) -> str | None:
        """The channel tag of a sender handle, if the app ever held it."""
        return self._sender_tag.get((side, handle))

    def receiver_tag(self, side: Party, handle: int) -> str | None:
        """The channel tag of a receiver handle, if the app ever held it."""
        return self._receiver_tag.get((side, handle))

    # ---- messages ----
    def on_send(
        self, side: Party, sender: int, tag: str, k: int, delivery: Delivery, number: int, now: float = 0.0
    ) -> None:
        """The app sent message k of `tag`, numbered `number` by the engine."""
        msg = SentMessage(tag, k, side, sender, delivery, number, sent_at=now)
        reliable = delivery is not Delivery.UNRELIABLE
        key = (side, sender, reliable, number)
        if key in self._by_number:
            self.violations.append(f"{_who(side)} sender {sender}: number {number} reused for {msg.name}")
        self._by_number[key] = msg
        self.messages[(tag, k)] = msg
        self.channels[tag].sends += 1

    def on_acknack(
        self, side: Party, sender: int, reliable: bool, first: int, stop: int, ack: bool, now: float = 0.0
    ) -> None:
        """MessagesAcked / MessagesNacked for numbers first..stop-1."""
        word = "acked" if ack else "nacked"
        if stop <= first:
            self.violations.append(f"{_who(side)} sender {sender}: empty {word} range {first}..{stop}")
        for n in range(first, stop):
            msg = self._by_number.get((side, sender, reliable, n))
            if msg is None:
                self.violations.append(f"{_who(side)} sender {sender}: {word} {n} (reliable={reliable}) never sent")
                continue
            if msg.resolved_at is None:
                msg.resolved_at = now
            if ack:
                msg.acked += 1
            else:
                msg.nacked += 1
            if msg.acked + msg.nacked > 1:
                self.violations.append(f"{msg.name}: acked {msg.acked}x and nacked {msg.nacked}x")
            if msg.nacked and msg.delivered:
                self.violations.append(f"{msg.name}: nacked after being delivered")

    def on_deliver(self, side: Party, receiver: int, d: Delivered) -> list[str]:
        """A message taken by the app; returns the tags of its attachments."""
        try:
            tag, k, atts = decode_payload(d.payload)
        except ValueError as exc:
            self.violations.append(f"{_who(side)} receiver {receiver}: {exc}")
            return []
        expected = self._receiver_tag.get((side, receiver))
        if expected != tag:
            self.violations.append(f"{_who(side)} receiver {receiver} (channel {expected}) delivered {tag}#{k}")
        msg = self.on_delivery(side, tag, k, d.delivery, d.number)
        if msg is not None and len(d.attachments) != len(atts):
            self.violations.append(f"{msg.name}: {len(d.attachments)} attachments delivered, {len(atts)} sent")
        return atts

    def on_delivery(self, side: Party, tag: str, k: int, delivery: Delivery, number: int) -> SentMessage | None:
        """Message k of `tag` reached an application on `side`, as `delivery` numbered `number`; its record."""
        msg = self.messages.get((tag, k))
        if msg is None:
            self.violations.append(f"{_who(side)}: delivered {tag}#{k}, never sent")
            return None
        msg.delivered += 1
        if msg.delivered > 1:
            self.violations.append(f"{msg.name}: delivered {msg.delivered}x")
        if msg.nacked:
            self.violations.append(f"{msg.name}: delivered after being nacked")
        # a receiver sees only whether a message came on a stream or in a datagram; order is the sender's
        if number != msg.number or (delivery is Delivery.UNRELIABLE) != (msg.delivery is Delivery.UNRELIABLE):
            self.violations.append(f"{msg.name}: delivered as {delivery.value} n={number}")
        rec = self.channels[tag]
        if msg.delivery is Delivery.ORDERED:
            if k <= rec.last_ordered:
                self.violations.append(f"{msg.name}: ordered delivery after #{rec.last_ordered}")
            rec.last_ordered = max(rec.last_ordered, k)
        return msg

    # ---- the end ----
    def channel_messages(self, tag: str) -> list[SentMessage]:
        """The messages sent on `tag`, by counter."""
        return sorted((m for m in self.messages.values() if m.tag == tag), key=lambda m: m.k)

    def check_all_reliable_delivered(self, tag: str) -> None:
        """The receiver of `tag` saw the finish: every reliable message reached it."""
        missing = [m.k for m in self.channel_messages(tag) if m.delivery is not Delivery.UNRELIABLE and not m.delivered]
        if missing:
            self.violations.append(f"channel {tag}: finished but reliable {missing} missing")

    def check_settled(self, tag: str) -> None:
        """Both ends of `tag` finished cleanly and its acks are in: every reliable message acked, every
        unreliable one acked or nacked, and acked exactly when it was delivered."""
        for msg in self.channel_messages(tag):
            if msg.delivery is not Delivery.UNRELIABLE:
                if not msg.acked:
                    self.violations.append(f"{msg.name}: reliable, finished, not acked (nacked {msg.nacked}x)")
            elif not msg.acked and not msg.nacked:
                self.violations.append(f"{msg.name}: never acked nor nacked though both ends finished")
            elif bool(msg.acked) != bool(msg.delivered):
                self.violations.append(f"{msg.name}: acked {msg.acked}x but delivered {msg.delivered}x")

    def forget_channel(self, tag: str) -> None:
        """Drop a checked channel and its messages (keeps a long run's memory flat)."""
        self.channels.pop(tag, None)
        for msg in self.channel_messages(tag):
            del self.messages[(msg.tag, msg.k)]
            self._by_number.pop((msg.side, msg.sender, msg.delivery is not Delivery.UNRELIABLE, msg.number), None)

    def final_check(self, connection_lost: bool) -> None:
        """Rules that need quiescence (after the finale drained and finished everything)."""
        self._check_end_reasons()
        if connection_lost:
            return
        for msg in self.messages.values():
            rec = self.channels[msg.tag]
            resolved = msg.acked or msg.nacked
            if not resolved and not rec.sender_abandoned:
                self.violations.append(
                    f"{msg.name}: never acked nor nacked (sender ended {_r(rec.sender_end)}, "
                    f"receiver {_r(rec.receiver_end)}, delivered {msg.delivered}x)"
                )
            if msg.delivered and not msg.acked and not rec.sender_abandoned:
                self.violations.append(f"{msg.name}: delivered but not acked")
            excused = rec.sender_abandoned or rec.receiver_discarded or rec.receiver is None
            if msg.acked and not msg.delivered and not excused:
                self.violations.append(
                    f"{msg.name}: acked but never delivered to a receiver the app held and drained "
                    f"(receiver ended {_r(rec.receiver_end)})"
                )

    def _check_end_reasons(self) -> None:
        """Each end reason needs a cause: LOST a lost creating message, CANCELLED the sending app, RECEIVER_DROPPED
        the receiving app (or an attachment the app never took)."""
        for rec in self.channels.values():
            ends = (rec.sender_end, rec.receiver_end)
            creator = self.messages.get(rec.created_by) if rec.created_by else None
            if EndReason.LOST in ends and (creator is None or creator.delivered):
                self.violations.append(f"channel {rec.tag}: ended lost though its creating message was delivered")
            if rec.receiver_end is EndReason.CANCELLED and not rec.sender_abandoned and rec.sender is not None:
                self.violations.append(f"channel {rec.tag}: receiver ended cancelled, the sending app never cancelled")
            dropped = rec.receiver_discarded or rec.receiver is None
            if rec.sender_end is EndReason.RECEIVER_DROPPED and not dropped:
                self.violations.append(f"channel {rec.tag}: sender ended receiver-dropped, the receiving app kept it")


def _r(reason: EndReason | None) -> str:
    return reason.value if reason else "-"

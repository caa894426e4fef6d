"""Receiver state: the application queue and the receiver's ack ledger.

States: OPEN --FinishSender--> FINISHING --all accounted--> closed(FINISHED);
any --cancel reset / app close--> closed; any --lost--> gone. "closed" means
AckNackUnreliable (if any acks owed) + CloseReceiver + FIN were sent; a
receiver cannot close before its control stream is attached, so a close
requested earlier waits (`close_reason`).

Reliable: every processed number is owed an ack; AckReliable frames carry
only newly acked numbers as positive runs, counted from the contiguous prefix
already acked. Unreliable: numbers are decided in order from `unrel_start`:
received -> ack; declared by SentUnreliable and still missing when the
declaration's nack deadline passes -> nack. A decided prefix is sent in one
AckNackUnreliable; anything below `unrel_start` that arrives later is dropped
(so a nacked message is never delivered).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import Enum

from ..errors import EndReason
from ..wire.channel_id import ChannelId
from ..wire.ranges import runs_to_ranges
from .queue import MessageQueue
from .rangeset import RangeSet


class RState(Enum):
    """Receiver protocol states."""

    OPEN = "open"
    FINISHING = "finishing"
    GONE = "gone"


@dataclass(slots=True)
class Receiver:
    """One local receiving half."""

    handle: int
    channel: ChannelId
    exposed: bool
    claimed: bool
    """Handed out by a message (or the entrypoint); auto-created receivers are unclaimed until then."""
    state: RState = RState.OPEN
    ctrl: int | None = None
    ctrl_open: bool = False
    queue: MessageQueue | None = None
    """Messages waiting for the application (allocated with the first; an idle channel holds none)."""
    rel_acked: RangeSet = field(default_factory=RangeSet)
    rel_prefix: int = 0
    rel_pending: RangeSet = field(default_factory=RangeSet)
    rel_done: RangeSet = field(default_factory=RangeSet)
    """Processed reliable numbers at or above `done_prefix`."""
    done_prefix: int = 0
    """Processed reliable numbers not yet acked in a frame."""
    finish_count: int | None = None
    unrel_start: int = 0
    unrel_received: RangeSet = field(default_factory=RangeSet)
    declared: int = 0
    declarations: deque[tuple[int, float, float]] | None = None
    """(declared count, nack deadline, first deadline) per batch of SentUnreliable frames, in order
    (allocated with the first)."""
    nack_upto: int = 0
    """Numbers below this whose declaration timed out may be nacked."""
    ack_due: float | None = None
    close_reason: EndReason | None = None
    """A close requested before the control stream was attached."""
    app_dropped: bool = False
    end_reason: EndReason | None = None
    end_reported: bool = False
    messages_seen: int = 0
    oneshot: bool = field(init=False)
    """The channel carries exactly one message."""

    def __post_init__(self) -> None:
        self.oneshot = self.channel.oneshot

    @property
    def queue_bytes(self) -> int:
        """Payload bytes waiting for the application."""
        return 0 if self.queue is None else self.queue.nbytes

    def has_reliable(self, n: int) -> bool:
        """Whether reliable message n was already processed."""
        return n < self.done_prefix or n in self.rel_done

    def mark_reliable(self, n: int) -> None:
        """Reliable message n was processed: it is owed an ack."""
        self.rel_pending.add_one(n)
        if n == self.done_prefix and not self.rel_done:
            self.done_prefix = n + 1
            return
        self.rel_done.add(n, n + 1)
        self.done_prefix = self.rel_done.prefix_end(self.done_prefix)
        self.rel_done.discard_below(self.done_prefix)

    def _done_runs(self, start: int) -> list[tuple[int, int, bool]]:
        """Runs of processed (True) and missing numbers from `start` to the last processed one."""
        runs: list[tuple[int, int, bool]] = []
        if self.done_prefix > start:
            runs.append((start, self.done_prefix, True))
        stop = max(self.rel_done.max_stop(), self.done_prefix)
        runs.extend(self.rel_done.runs(max(start, self.done_prefix), stop))
        return runs

    def take_ack_reliable(self) -> tuple[int, ...] | None:
        """Range ints for an AckReliable of the pending acks, or None if none pending."""
        if not self.rel_pending:
            return None
        start = self.rel_prefix
        runs = list(self.rel_pending.runs(start, self.rel_pending.max_stop()))
        for a, b in self.rel_pending:
            self.rel_acked.add(a, b)
        self.rel_pending.clear()
        self.rel_prefix = self.rel_acked.prefix_end(self.rel_prefix)
        self.rel_acked.discard_below(self.rel_prefix)
        return tuple(runs_to_ranges(start, runs))

    def close_ranges(self) -> tuple[int, ...]:
        """Range ints for CloseReceiver: from the ack prefix, everything processed positive, the rest negative."""
        return tuple(runs_to_ranges(self.rel_prefix, self._done_runs(self.rel_prefix)))

    def decided_end(self) -> int:
        """End of the prefix of unreliable numbers that can be acked or nacked now."""
        e = self.unrel_start
        while True:
            e2 = self.unrel_received.prefix_end(e)
            if e2 > e:
                e = e2
                continue
            if e < self.nack_upto:
                nxt = self.unrel_received.next_start_at_or_after(e)
                e = self.nack_upto if nxt is None else min(nxt, self.nack_upto)
                continue
            return e

    def take_acknack(self, end: int) -> tuple[int, ...] | None:
        """Range ints for an AckNackUnreliable up to `end`, advancing the start."""
        if end <= self.unrel_start:
            return None
        runs = list(self.unrel_received.runs(self.unrel_start, end))
        ranges = runs_to_ranges(self.unrel_start, runs)
        self.unrel_start = end
        self.unrel_received.discard_below(end)
        return tuple(ranges)

    def all_accounted(self) -> bool:
        """Finishing: every declared reliable message processed and every unreliable one decided."""
        if self.finish_count is None:
            return False
        return self.done_prefix >= self.finish_count and self.decided_end() >= self.declared

"""The ack and nack ledgers of a receiver and of a sender (spec: "Acknowledgements", "AckReliable", "AckNackUnreliable",
"SentUnreliable", "FinishSender", "CloseReceiver").

Reliable numbers: every number processed is owed an ack (`rel_pending`);
`done_prefix` and `rel_done` say which are processed (a contiguous prefix
plus the holes above it), so a duplicate or a number at or beyond the
FinishSender count is caught. AckReliable frames carry only newly acked
numbers as positive runs, counted from the prefix already acked
(`rel_prefix`); CloseReceiver carries, from that prefix, everything
processed as positive and the rest as negative.

Acks when taken (`on_take`, EngineConfig.ack_on_take; the API turns it on,
decision API-34): a processed number is owed its ack only when the
application takes its message (`taken`), so that the application's check
(the typed API's: is it a T?) comes before any AckReliable. A number the
application refuses right after taking it (`refuse`, before any frame was
written) leaves `rel_pending` for `rel_refused`; `accept_refused` owes them
after all (the application read on past them: the wire cannot nack one
reliable message and keep the channel). CloseReceiver then carries as
positive what was acked or owed and, when the channel finished (its queue
stays takeable), what is still queued; everything else (refused, or
discarded untaken) is negative: nacked.

Unreliable numbers are decided in order from `unrel_start`: received ->
ack; declared by SentUnreliable and still missing when that declaration's
nack deadline (max(nack_timeout, 2*RTT)) passes -> nack. Declarations
within ack_delay of each other share one entry, so `declarations` stays
bounded whatever the peer sends. The decided prefix goes out in one
AckNackUnreliable; a number below `unrel_start` that arrives later is
dropped, so a nacked message is never delivered.

Every set here is a RangeSet (rangeset.py): memory follows the holes, not
the history. The peer chooses the holes, so the number of ranges one
receiver holds is what a per-channel cap bounds (`ranges_held`):
`check_caps` refuses reliable holes past `max_ack_ranges` (LIMIT_EXCEEDED:
they are messages that must still arrive) and says when unreliable ones
are past it, and `nack_oldest` then lets the oldest unreliable holes be
nacked at once (every number below one received was sent). The
per-connection sum is kept by receiving.py (`Receivers.note_ranges`).
ReceiveAcks only computes; receiving.py decides when its frames are written.

The sender's side (SendAcks): reliable acks arrive as AckReliable ranges
from the receiver's contiguous ack prefix (a number acked twice, or one
never sent, is a protocol error); unreliable acks/nacks arrive strictly in
order from where the previous AckNackUnreliable stopped; CloseReceiver
settles every reliable number, implicit nacks included. Each call returns
the runs newly decided, which sending.py reports exactly once. Its holes
are the peer's choice too: `check_caps` closes past `max_ack_ranges`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..wire.errors import CloseCode, ProtocolError
from ..wire.ranges import ranges_to_runs, runs_to_ranges
from .rangeset import RangeSet

Run = tuple[bool, int, int]
"""(reliable, first, stop): message numbers first to stop-1 of one number space."""

Declaration = tuple[int, float, float]
"""(declared count, nack deadline, first deadline) of one batch of SentUnreliable frames."""


@dataclass(slots=True)
class ReceiveAcks:
    """The ack/nack ledger of one receiver."""

    rel_acked: RangeSet = field(default_factory=RangeSet)
    """Reliable numbers at or above `rel_prefix` already acked in a frame."""
    rel_prefix: int = 0
    """Every reliable number below this was acked in a frame."""
    rel_pending: RangeSet = field(default_factory=RangeSet)
    """Processed reliable numbers not yet acked in a frame."""
    rel_done: RangeSet = field(default_factory=RangeSet)
    """Processed reliable numbers at or above `done_prefix`."""
    done_prefix: int = 0
    """Every reliable number below this was processed."""
    finish_count: int | None = None
    """The FinishSender count, once it came."""
    unrel_start: int = 0
    """Every unreliable number below this was acked or nacked."""
    unrel_received: RangeSet = field(default_factory=RangeSet)
    declared: int = 0
    """Unreliable messages the sender declared sent (SentUnreliable counts)."""
    declarations: deque[Declaration] | None = None
    """Batches of declarations whose nack deadline has not passed, in order (allocated with the first)."""
    nack_upto: int = 0
    """Numbers below this whose declaration timed out may be nacked."""
    ack_due: float | None = None
    """When the acks owed now must be written (ack_delay after the first became owed): read by others, set by
    `owe_acks`, cleared by `acks_written`."""
    on_take: bool = False
    """A reliable number is owed its ack when its message is taken (`taken`), not when processed (see above)."""
    rel_refused: RangeSet | None = None
    """Taken reliable numbers the application refused: neither acked nor owed (nacked at a close; allocated with
    the first refusal)."""

    # ---- when acks are due ----
    def owe_acks(self, due: float) -> None:
        """Acks became owed: write them by `due`, unless some were owed already (their earlier time stands)."""
        if self.ack_due is None:
            self.ack_due = due

    def acks_written(self) -> None:
        """Every ack owed was written (receiving.py): none is due."""
        self.ack_due = None

    # ---- the caps' home ----
    def ranges_held(self) -> int:
        """Ranges this ledger holds: the figure a per-channel (and, summed, a per-connection) cap bounds."""
        refused = self.rel_refused
        return (len(self.rel_acked) + len(self.rel_pending) + len(self.rel_done) + len(self.unrel_received)
                + (len(refused) if refused is not None else 0))

    def check_caps(self, cap: int, channel: int) -> bool:
        """Enforce the per-channel cap: ProtocolError LIMIT_EXCEEDED if the reliable holes alone pass it;
        whether the unreliable ones must be trimmed (`nack_oldest`) to get back under it."""
        reliable = len(self.rel_acked) + len(self.rel_pending) + len(self.rel_done)
        if reliable > cap:
            raise ProtocolError(f"more than max_ack_ranges={cap} ranges of reliable message numbers on channel "
                                f"{channel} (the peer leaves gaps)", CloseCode.LIMIT_EXCEEDED)
        return reliable + len(self.unrel_received) > cap

    def nack_oldest(self, keep: int) -> None:
        """Let the oldest unreliable holes be nacked now, so that at most `keep` received ranges are left once
        the decided prefix is taken (`take_acknack(decided_end())`). Every number below one received was sent."""
        starts = [a for a, _ in self.unrel_received]
        if len(starts) > keep:
            self.nack_upto = max(self.nack_upto, starts[len(starts) - max(keep, 1)])

    # ---- reliable ----
    def has_reliable(self, n: int) -> bool:
        """Whether reliable message n was already processed."""
        return n < self.done_prefix or n in self.rel_done

    def mark_reliable(self, n: int) -> None:
        """Reliable message n was processed: it is owed an ack (once taken, `on_take`)."""
        if not self.on_take:
            self.rel_pending.add_one(n)
        if n == self.done_prefix and not self.rel_done:
            self.done_prefix = n + 1
            return
        self.rel_done.add(n, n + 1)
        self.done_prefix = self.rel_done.prefix_end(self.done_prefix)
        self.rel_done.discard_below(self.done_prefix)

    def in_order(self, first: int, k: int) -> None:
        """Reliable messages first .. first+k-1, the next in order (`first` is `done_prefix`), were processed."""
        if not self.on_take:
            self.rel_pending.add(first, first + k)
        self.done_prefix = first + k

    def taken(self, first: int, stop: int) -> None:
        """`on_take`: the application took reliable messages first .. stop-1 (processed, not yet owed): they are
        owed their acks now."""
        self.rel_pending.add(first, stop)

    def refuse(self, first: int, stop: int) -> None:
        """`on_take`: the application refused first .. stop-1, just taken (owed, no frame written since): they are
        no longer owed (ValueError if one is not owed: its ack may be written already)."""
        for a, _b, owed in self.rel_pending.runs(first, stop):
            if not owed:
                raise ValueError(f"refusing reliable message {a}, which is not owed an ack")
        if self.rel_refused is None:
            self.rel_refused = RangeSet()
        self.rel_refused.add(first, stop)
        self.rel_pending = _without(self.rel_pending, first, stop)

    def accept_refused(self) -> bool:
        """The application read on past what it refused: owe their acks after all; whether there were any."""
        refused = self.rel_refused
        if refused is None or not refused:
            return False
        for a, b in refused:
            self.rel_pending.add(a, b)
        refused.clear()
        return True

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

    def close_ranges(self, queued_kept: bool = True) -> tuple[int, ...]:
        """Range ints for CloseReceiver: from the ack prefix, everything processed positive, the rest negative.

        `on_take`: positive is what was acked or owed, and, if `queued_kept` (a finish: the queue stays takeable),
        what is still queued; refused and discarded numbers are negative (nacked)."""
        start = self.rel_prefix
        if not self.on_take or (queued_kept and not self.rel_refused):  # (then: everything processed)
            return tuple(runs_to_ranges(start, self._done_runs(start)))
        positive = RangeSet()
        if queued_kept:
            for a, b, done in self._done_runs(start):
                if done:
                    positive.add(a, b)
            for a, b in self.rel_refused or ():
                positive = _without(positive, a, b)
        else:
            for a, b in self.rel_acked:
                positive.add(a, b)
            for a, b in self.rel_pending:
                positive.add(a, b)
        return tuple(runs_to_ranges(start, list(positive.runs(start, max(positive.max_stop(), start)))))

    # ---- unreliable ----
    def owed(self) -> bool:
        """Whether acks (reliable or unreliable) can be written now, i.e. rel_pending or decided_end() > start."""
        start = self.unrel_start
        return bool(self.rel_pending) or start < self.nack_upto or start in self.unrel_received

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

    def declare(self, count: int, deadline: float, coalesce: float) -> None:
        """SentUnreliable(count): these may be nacked after `deadline` (joining the last batch if its first
        deadline is within `coalesce`: entries stay bounded, nothing is nacked early)."""
        self.declared += count
        decl = self.declarations
        if decl is None:
            decl = self.declarations = deque()
        last = decl[-1] if decl else None
        if last is not None and deadline - last[2] <= coalesce:
            decl[-1] = (self.declared, deadline, last[2])
        else:
            decl.append((self.declared, deadline, deadline))

    def next_nack_deadline(self) -> float | None:
        """The deadline of the first declaration that would nack more, if any."""
        for upto, deadline, _ in self.declarations or ():
            if upto > self.nack_upto:
                return deadline
        return None

    def nacks_due(self, now: float) -> bool:
        """Let every declaration whose deadline passed nack; whether that moved `nack_upto`."""
        decl = self.declarations
        moved = False
        while decl and decl[0][1] <= now:
            upto = decl.popleft()[0]
            if upto > self.nack_upto:
                self.nack_upto = upto
                moved = True
        return moved

    # ---- finishing ----
    def finish(self, count: int) -> None:
        """FinishSender(count): check it against what was processed and declared (ProtocolError if it lies)."""
        if self.rel_done.max_stop() > count or self.done_prefix > count:
            raise ProtocolError(f"FinishSender count {count} below a message already received")
        if self.unrel_received.max_stop() > self.declared or self.unrel_start > self.declared:
            raise ProtocolError("FinishSender before declaring every unreliable message received")
        self.finish_count = count

    def all_accounted(self) -> bool:
        """Finishing: every declared reliable message processed and every unreliable one decided."""
        if self.finish_count is None:
            return False
        return self.done_prefix >= self.finish_count and self.decided_end() >= self.declared


def _without(numbers: RangeSet, first: int, stop: int) -> RangeSet:
    """`numbers` less first .. stop-1 (a new set: the rare path of a refusal)."""
    out = RangeSet()
    for a, b in numbers:
        if a < first:
            out.add(a, min(b, first))
        if b > stop:
            out.add(max(a, stop), b)
    return out


def settle_fresh(next_rel: int, next_unrel: int) -> list[Run]:
    """What `SendAcks().settle_all(next_rel, next_unrel)` returns, without a ledger."""
    runs: list[Run] = []
    if next_rel > 0:
        runs.append((True, 0, next_rel))
    if next_unrel > 0:
        runs.append((False, 0, next_unrel))
    return runs


@dataclass(slots=True)
class SendAcks:
    """The ack/nack ledger of one sender (numbers are sent by the SenderRecord: `next_rel`, `next_unrel`)."""

    rel_acked: RangeSet = field(default_factory=RangeSet)
    """Reliable numbers at or above `rel_prefix` acked."""
    rel_prefix: int = 0
    """Every reliable number below this was acked or nacked."""
    unrel_resolved: int = 0
    """Every unreliable number below this was acked or nacked."""

    def ranges_held(self) -> int:
        """Ranges this ledger holds (see ReceiveAcks.ranges_held)."""
        return len(self.rel_acked)

    def check_caps(self, cap: int, channel: int) -> None:
        """ProtocolError LIMIT_EXCEEDED if the peer's acks left more than `cap` ranges (it acks 0, 2, 4, ...)."""
        if len(self.rel_acked) > cap:
            raise ProtocolError(f"more than max_ack_ranges={cap} ranges of acked message numbers on channel "
                                f"{channel} (the peer acks with gaps)", CloseCode.LIMIT_EXCEEDED)

    def ack_reliable(self, ranges: tuple[int, ...], next_rel: int, channel: int) -> list[tuple[int, int]]:
        """Apply an AckReliable; return the newly acked runs. Raises ProtocolError on a double or bogus ack."""
        out: list[tuple[int, int]] = []
        for first, stop, positive in ranges_to_runs(self.rel_prefix, ranges):
            if not positive:
                continue
            if stop > next_rel:
                raise ProtocolError(f"AckReliable acks unsent message {stop - 1} on channel {channel}")
            if self.rel_acked.overlaps(first, stop):
                raise ProtocolError(f"AckReliable acks message twice on channel {channel}")
            self.rel_acked.add(first, stop)
            out.append((first, stop))
        self._advance_prefix()
        return out

    def _advance_prefix(self) -> None:
        self.rel_prefix = self.rel_acked.prefix_end(self.rel_prefix)
        self.rel_acked.discard_below(self.rel_prefix)

    def acknack_unreliable(self, ranges: tuple[int, ...], next_unrel: int, channel: int) -> list[tuple[int, int, bool]]:
        """Apply an AckNackUnreliable; return (first, stop, acked) runs."""
        runs = list(ranges_to_runs(self.unrel_resolved, ranges))
        end = runs[-1][1] if runs else self.unrel_resolved
        if end > next_unrel:
            raise ProtocolError(f"AckNackUnreliable covers unsent message {end - 1} on channel {channel}")
        self.unrel_resolved = end
        return runs

    def close_receiver(
        self, ranges: tuple[int, ...], next_rel: int, channel: int
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """Apply a CloseReceiver: return (newly acked, nacked) reliable runs, counting implicit nacks."""
        acked: list[tuple[int, int]] = []
        nacked: list[tuple[int, int]] = []
        end = self.rel_prefix
        for first, stop, positive in ranges_to_runs(self.rel_prefix, ranges):
            end = stop
            if stop > next_rel:
                raise ProtocolError(f"CloseReceiver covers unsent message {stop - 1} on channel {channel}")
            for a, b, known in self.rel_acked.runs(first, stop):
                if known:
                    if not positive:
                        raise ProtocolError(f"CloseReceiver nacks acked message {a} on channel {channel}")
                    continue
                (acked if positive else nacked).append((a, b))
        for a, b, known in self.rel_acked.runs(end, next_rel):
            if not known:
                nacked.append((a, b))
        for a, b in acked:
            self.rel_acked.add(a, b)
        self._advance_prefix()
        return acked, nacked

    def unresolved_reliable(self, next_rel: int) -> list[tuple[int, int]]:
        """Reliable runs neither acked nor nacked yet."""
        return [(a, b) for a, b, known in self.rel_acked.runs(self.rel_prefix, next_rel) if not known]

    def settle_unreliable(self, next_unrel: int) -> Run | None:
        """Every unreliable message not yet acked or nacked, as one run, now counted as nacked."""
        if next_unrel <= self.unrel_resolved:
            return None
        first, self.unrel_resolved = self.unrel_resolved, next_unrel
        return False, first, next_unrel

    def settle_all(self, next_rel: int, next_unrel: int) -> list[Run]:
        """Every message not yet acked or nacked (reliable runs, then the unreliable one), now counted as nacked."""
        runs: list[Run] = []
        if self.rel_acked:
            runs += [(True, a, b) for a, b in self.unresolved_reliable(next_rel)]
        elif next_rel > self.rel_prefix:
            runs.append((True, self.rel_prefix, next_rel))
        self.rel_prefix = next_rel
        self.rel_acked.clear()
        unreliable = self.settle_unreliable(next_unrel)
        if unreliable is not None:
            runs.append(unreliable)
        return runs

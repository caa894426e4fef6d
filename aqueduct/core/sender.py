"""Sender state: numbering, message streams, and the sender's ack ledger.

States (spec: the finish and cancel procedures; "After this, the sender
ceases to exist"), moved only by `move`, which checks `TRANSITIONS`:

  OPEN --finish()--> FINISH_WAIT --control stream--> FINISHED (FinishSender+FIN sent)
  OPEN or FINISH_WAIT --cancel()--> CANCEL_WAIT --control stream--> CANCELLED (control stream reset 1)
  any but GONE --CloseReceiver, a reset of the control stream, cascading loss, connection lost--> GONE

Reliable acks arrive as AckReliable ranges from the receiver's contiguous
ack prefix; unreliable acks/nacks arrive strictly in order from where the
previous AckNackUnreliable stopped. A number is reported to the application
exactly once: acked (deferred while the sender is unreachable, because a
later upstream loss turns it into a nack) or nacked. This module only keeps
the ledger; sending.py turns it into frames and events, and is the only
writer of a Sender's other fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..errors import EndReason
from ..wire.channel_id import ChannelId
from ..wire.errors import ProtocolError
from ..wire.ranges import ranges_to_runs
from .rangeset import RangeSet
from .transitions import checked


class SState(Enum):
    """Sender states (see the diagram above)."""

    OPEN = "open"
    FINISH_WAIT = "finish_wait"
    FINISHED = "finished"
    CANCEL_WAIT = "cancel_wait"
    CANCELLED = "cancelled"
    GONE = "gone"


_S = SState
TRANSITIONS: dict[SState, frozenset[SState]] = {
    _S.OPEN: frozenset({_S.FINISH_WAIT, _S.CANCEL_WAIT, _S.GONE}),
    _S.FINISH_WAIT: frozenset({_S.FINISHED, _S.CANCEL_WAIT, _S.GONE}),
    _S.FINISHED: frozenset({_S.GONE}),
    _S.CANCEL_WAIT: frozenset({_S.CANCELLED, _S.GONE}),
    _S.CANCELLED: frozenset({_S.GONE}),
    _S.GONE: frozenset(),
}
"""The moves each sender state allows."""

Run = tuple[bool, int, int]
"""(reliable, first, stop): message numbers first to stop-1 of one number space."""


@dataclass(slots=True)
class Sender:
    """One local sending half."""

    handle: int
    channel: ChannelId
    reachable: bool
    exposed: bool
    state: SState = SState.OPEN
    ctrl: int | None = None
    ctrl_open: bool = False
    """Our direction of the control stream can still be written."""
    next_rel: int = 0
    next_unrel: int = 0
    rel_acked: RangeSet = field(default_factory=RangeSet)
    rel_prefix: int = 0
    unrel_resolved: int = 0
    undeclared: int = 0
    ordered_sid: int | None = None
    unordered_sids: dict[int, int] | None = None
    """Message number -> its own stream, for unordered messages not yet acked (allocated with the first)."""
    deferred: list[tuple[bool, int, int]] = field(default_factory=list)
    """Acks (reliable, first, stop) held back while unreachable."""
    app_dropped: bool = False
    end_reason: EndReason | None = None
    """Set once SenderEnded was decided; emitted when reachable (or lost)."""
    end_reported: bool = False
    head: bytes | None = None
    """The first bytes of its Message frames (wire.frames.message_head, made by the first plain write)."""
    oneshot: bool = field(init=False)
    """The channel carries exactly one message."""

    def __post_init__(self) -> None:
        self.oneshot = self.channel.oneshot

    def move(self, to: SState) -> None:
        """Change state, as TRANSITIONS allows (else IllegalTransition)."""
        self.state = checked(TRANSITIONS, f"sender {self.handle}", self.state, to)

    @property
    def can_send(self) -> bool:
        """Whether send() is allowed."""
        return self.state is SState.OPEN

    def ack_reliable(self, ranges: tuple[int, ...]) -> list[tuple[int, int]]:
        """Apply an AckReliable; return the newly acked runs. Raises ProtocolError on a double or bogus ack."""
        out: list[tuple[int, int]] = []
        for first, stop, positive in ranges_to_runs(self.rel_prefix, ranges):
            if not positive:
                continue
            if stop > self.next_rel:
                raise ProtocolError(f"AckReliable acks unsent message {stop - 1} on channel {self.channel}")
            if self.rel_acked.overlaps(first, stop):
                raise ProtocolError(f"AckReliable acks message twice on channel {self.channel}")
            self.rel_acked.add(first, stop)
            out.append((first, stop))
        self._advance_prefix()
        return out

    def _advance_prefix(self) -> None:
        self.rel_prefix = self.rel_acked.prefix_end(self.rel_prefix)
        self.rel_acked.discard_below(self.rel_prefix)

    def acknack_unreliable(self, ranges: tuple[int, ...]) -> list[tuple[int, int, bool]]:
        """Apply an AckNackUnreliable; return (first, stop, acked) runs."""
        runs = [r for r in ranges_to_runs(self.unrel_resolved, ranges)]
        end = runs[-1][1] if runs else self.unrel_resolved
        if end > self.next_unrel:
            raise ProtocolError(f"AckNackUnreliable covers unsent message {end - 1} on channel {self.channel}")
        self.unrel_resolved = end
        return runs

    def close_receiver(self, ranges: tuple[int, ...]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """Apply a CloseReceiver: return (newly acked, nacked) reliable runs, counting implicit nacks."""
        acked: list[tuple[int, int]] = []
        nacked: list[tuple[int, int]] = []
        end = self.rel_prefix
        for first, stop, positive in ranges_to_runs(self.rel_prefix, ranges):
            end = stop
            if stop > self.next_rel:
                raise ProtocolError(f"CloseReceiver covers unsent message {stop - 1} on channel {self.channel}")
            for a, b, known in self.rel_acked.runs(first, stop):
                if known:
                    if not positive:
                        raise ProtocolError(f"CloseReceiver nacks acked message {a} on channel {self.channel}")
                    continue
                (acked if positive else nacked).append((a, b))
        for a, b, known in self.rel_acked.runs(end, self.next_rel):
            if not known:
                nacked.append((a, b))
        for a, b in acked:
            self.rel_acked.add(a, b)
        self._advance_prefix()
        return acked, nacked

    def unresolved_reliable(self) -> list[tuple[int, int]]:
        """Reliable runs neither acked nor nacked yet."""
        return [(a, b) for a, b, known in self.rel_acked.runs(self.rel_prefix, self.next_rel) if not known]

    def settle_unreliable(self) -> Run | None:
        """Every unreliable message not yet acked or nacked, as one run, now counted as nacked."""
        if self.next_unrel <= self.unrel_resolved:
            return None
        first, self.unrel_resolved = self.unrel_resolved, self.next_unrel
        return False, first, self.next_unrel

    def settle_all(self) -> list[Run]:
        """Every message not yet acked or nacked (reliable runs, then the unreliable one), now counted as nacked."""
        runs: list[Run] = []
        if self.rel_acked:
            runs += [(True, a, b) for a, b in self.unresolved_reliable()]
        elif self.next_rel > self.rel_prefix:
            runs.append((True, self.rel_prefix, self.next_rel))
        self.rel_prefix = self.next_rel
        self.rel_acked.clear()
        unreliable = self.settle_unreliable()
        if unreliable is not None:
            runs.append(unreliable)
        return runs

"""SenderRecord, the engine's record of one sender (not the API's Sender half):
numbering, message streams, and the sender's ack ledger.

States (spec: the finish and cancel procedures; "After this, the sender
ceases to exist"), moved only by `move`, which checks `TRANSITIONS`:

  OPEN --finish()--> FINISH_WAIT --control stream--> FINISHED (FinishSender+FIN sent)
  OPEN or FINISH_WAIT --cancel()--> CANCEL_WAIT --control stream--> CANCELLED (control stream reset 1)
  any but GONE --CloseReceiver, a reset of the control stream, cascading loss, connection lost--> GONE

A number is reported to the application exactly once: acked (deferred
while the sender is unreachable, because a later upstream loss turns it
into a nack) or nacked. The ack ledger is acks.py's (SendAcks); sending.py
turns it into events, and is the only writer of a SenderRecord's other fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..errors import EndReason
from ..wire.channel_id import ChannelId
from .acks import Run, SendAcks, settle_fresh
from .transitions import checked


class SState(Enum):
    """Sender states (see the diagram above)."""

    __hash__ = object.__hash__  # (members are singletons; Enum's own hash is a Python call, per table lookup)

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

@dataclass(slots=True)
class SenderRecord:
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
    acks: SendAcks | None = None
    """What the receiver acked and nacked (acks.py; allocated with the first use: an idle channel holds none)."""
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
        self.state = checked(TRANSITIONS, "sender", self.handle, self.state, to)

    def settle_all(self) -> list[Run]:
        """Every message not yet acked or nacked, now counted as nacked (SendAcks.settle_all; a sender that
        never had a ledger settles without allocating one: it ends right after)."""
        acks = self.acks
        if acks is None:
            return settle_fresh(self.next_rel, self.next_unrel)
        return acks.settle_all(self.next_rel, self.next_unrel)

    def ledger(self) -> SendAcks:
        """The ack ledger, allocated if this is its first use."""
        acks = self.acks
        if acks is None:
            acks = self.acks = SendAcks()
        return acks

    @property
    def can_send(self) -> bool:
        """Whether send() is allowed."""
        return self.state is SState.OPEN

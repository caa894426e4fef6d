"""ReceiverRecord, the engine's record of one receiver (not the API's Receiver half):
the protocol state, the control stream, the application queue, and the ack ledger.

States (spec: "Receiving", the receiver's close procedure; "the receiver
ceases to exist"), moved only by `move`, which checks `TRANSITIONS`:

  OPEN --FinishSender--> FINISHING --all accounted--> GONE (closed: FINISHED)
  OPEN --close before the control stream exists--> CLOSE_WAIT --control stream--> GONE (closed)
  OPEN or FINISHING --close (cancel reset, application)--> GONE (closed)
  any but GONE --a 'lost' reset, cascading loss, connection lost--> GONE

"closed" means AckNackUnreliable (if acks are owed) + CloseReceiver + FIN
were written. A receiver whose channel we minted gets its control stream
only when the peer opens it, so a close asked for before then waits in
CLOSE_WAIT (`close_reason` says why); its messages are discarded as they
come. FINISHING cannot meet CLOSE_WAIT: FinishSender arrives on the
control stream. The ack ledger is acks.py's; receiving.py is the only
writer of the other fields (halves.py of `claimed`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..errors import EndReason
from ..wire.channel_id import ChannelId
from .acks import ReceiveAcks
from .queue import MessageQueue
from .transitions import checked


class RState(Enum):
    """Receiver states (see the diagram above)."""

    __hash__ = object.__hash__  # (members are singletons; Enum's own hash is a Python call, per table lookup)

    OPEN = "open"
    FINISHING = "finishing"
    CLOSE_WAIT = "close_wait"
    GONE = "gone"


_R = RState
TRANSITIONS: dict[RState, frozenset[RState]] = {
    _R.OPEN: frozenset({_R.FINISHING, _R.CLOSE_WAIT, _R.GONE}),
    _R.FINISHING: frozenset({_R.GONE}),
    _R.CLOSE_WAIT: frozenset({_R.GONE}),
    _R.GONE: frozenset(),
}
"""The moves each receiver state allows."""


@dataclass(slots=True)
class ReceiverRecord:
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
    acks: ReceiveAcks | None = None
    """The ack ledger (allocated with the first message or control frame; an idle channel holds none)."""
    close_reason: EndReason | None = None
    """Why the receiver is closing, in CLOSE_WAIT."""
    app_dropped: bool = False
    end_reason: EndReason | None = None
    end_reported: bool = False
    messages_seen: int = 0
    ack_on_take: bool = False
    """Its ledger owes a reliable ack when the application takes the message (EngineConfig.ack_on_take)."""
    oneshot: bool = field(init=False)
    """The channel carries exactly one message."""

    def __post_init__(self) -> None:
        self.oneshot = self.channel.oneshot

    def move(self, to: RState) -> None:
        """Change state, as TRANSITIONS allows (else IllegalTransition)."""
        self.state = checked(TRANSITIONS, "receiver", self.handle, self.state, to)

    def ledger(self) -> ReceiveAcks:
        """The ack ledger, allocated if this is its first use."""
        acks = self.acks
        if acks is None:
            acks = self.acks = ReceiveAcks(on_take=self.ack_on_take)
        return acks

    @property
    def queue_bytes(self) -> int:
        """Payload bytes waiting for the application."""
        return 0 if self.queue is None else self.queue.nbytes

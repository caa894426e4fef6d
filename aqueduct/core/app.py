"""The application side of the engine: delivery modes, attachments, and events.

Handles are ints the engine allocates (never reused within a connection);
they are not channel IDs, because a channel ID can come back as a ghost
receiver after its first receiver is gone. Delivered and SendResult are made
once per message, so they are not frozen (cheaper to build); treat them as
values.

Spec: none (the application-facing side of the engine; the spec leaves it to implementations).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..errors import EndReason
from ..wire.channel_id import ChannelId
from ..wire.headers import Headers

SenderHandle = int
ReceiverHandle = int


class Delivery(Enum):
    """How a message travels."""

    ORDERED = "ordered"
    """Reliable and ordered: all messages of the channel on one uni stream."""
    UNORDERED = "unordered"
    """Reliable, unordered: one uni stream per message."""
    UNRELIABLE = "unreliable"
    """A QUIC datagram: may be lost (then nacked), never retransmitted."""


class AttachKind(Enum):
    """What a message hands the peer: a new channel's sender or its receiver."""

    SENDER = "sender"
    """The peer gets the sender; we keep a new local receiver."""
    RECEIVER = "receiver"
    """The peer gets the receiver; we keep a new local sender."""
    ONESHOT_SENDER = "oneshot_sender"
    ONESHOT_RECEIVER = "oneshot_receiver"

    @property
    def oneshot(self) -> bool:
        """Whether the new channel carries exactly one message."""
        return self in (AttachKind.ONESHOT_SENDER, AttachKind.ONESHOT_RECEIVER)

    @property
    def gives_sender(self) -> bool:
        """Whether the peer receives the sending half."""
        return self in (AttachKind.SENDER, AttachKind.ONESHOT_SENDER)


@dataclass(frozen=True, slots=True)
class Attachment:
    """A half handed to us inside a message: `is_sender` tells which kind `handle` is."""

    index: int
    channel: ChannelId
    is_sender: bool
    handle: int


@dataclass(slots=True, unsafe_hash=True)
class Delivered:
    """A message taken from a receiver."""

    payload: bytes
    attachments: tuple[Attachment, ...]
    channel: int
    number: int
    delivery: Delivery


@dataclass(slots=True, unsafe_hash=True)
class SendResult:
    """What `Connection.send` did: the message number, the local halves it created, and where it went."""

    number: int
    created: tuple[int, ...]
    """Local half per attachment, in order: a receiver handle for an attached sender, and vice versa."""
    stream_id: int | None
    """The QUIC stream the message was written to; None for a datagram."""


# ---- application events (Connection.events) ----


@dataclass(frozen=True, slots=True)
class HeadersReceived:
    """The peer's connection headers; on a server, `entrypoint` is the entrypoint receiver handle."""

    headers: Headers
    entrypoint: ReceiverHandle | None = None


@dataclass(frozen=True, slots=True)
class PeerAwaitingAcceptance:
    """Server with `EngineConfig.hold_until_accepted`: the client's headers arrived; nothing else of it is
    processed (and no reply is sent) until `Engine.accept_peer()`, or the application closes the connection."""

    headers: Headers


@dataclass(frozen=True, slots=True)
class MessageAvailable:
    """A receiver's queue went from empty to non-empty."""

    receiver: ReceiverHandle


@dataclass(frozen=True, slots=True)
class ReceiverEnded:
    """No more messages will arrive; queued ones remain takeable only when `reason` is FINISHED."""

    receiver: ReceiverHandle
    reason: EndReason


@dataclass(frozen=True, slots=True)
class SenderEnded:
    """A sender can no longer send: finish completed, receiver dropped, lost, or connection lost."""

    sender: SenderHandle
    reason: EndReason


@dataclass(frozen=True, slots=True)
class MessagesAcked:
    """Messages `first` to `stop`-1 of the given space were acked by the receiver."""

    sender: SenderHandle
    reliable: bool
    first: int
    stop: int


@dataclass(frozen=True, slots=True)
class MessagesNacked:
    """Messages `first` to `stop`-1 of the given space are lost: nacked, implicitly by CloseReceiver, or by cascade."""

    sender: SenderHandle
    reliable: bool
    first: int
    stop: int


@dataclass(frozen=True, slots=True)
class WritableAgain:
    """A sender that was waiting (control stream, limits) can send again."""

    sender: SenderHandle


@dataclass(frozen=True, slots=True)
class ConnectionClosed:
    """The Aqueduct connection is over; every handle has ended with CONNECTION_LOST."""

    error_code: int
    reason: str
    by_peer: bool


AppEvent = (
    HeadersReceived
    | PeerAwaitingAcceptance
    | MessageAvailable
    | ReceiverEnded
    | SenderEnded
    | MessagesAcked
    | MessagesNacked
    | WritableAgain
    | ConnectionClosed
)

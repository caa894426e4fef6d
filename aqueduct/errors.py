"""Errors an application sees, and the one table of how a channel ends.

A channel ends for one of the reasons of `EndReason`; `ENDINGS` maps each reason to the exception a
`recv` or `send` raises for it, the `Outcome` a confirmed message still unanswered then reports, and the
signal that carries it on the wire (a stream reset code, a CloseReceiver, the QUIC close). Every other
mapping (`ERROR_FOR_REASON`, `OUTCOME_FOR_END`, the docs' table) is read from it.

Connecting is not a channel: a connection that was never made raises `ConnectError` (and its
`AuthenticationFailed`), which is no `ChannelError`; a connection that was made and went away raises
`ConnectionLost` on every channel it carried.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum

from .wire.errors import AqueductError, CloseCode, ProtocolError


class ResetCode(IntEnum):
    """Aqueduct stream reset codes."""

    CANCELLED = 1
    LOST = 2


class EndReason(Enum):
    """Why a sender or receiver ended."""

    FINISHED = "finished"
    """Receiver: the sender finished and every message was delivered. Sender: finish completed."""
    CANCELLED = "cancelled"
    """Receiver: the sender cancelled the channel."""
    LOST = "lost"
    """Either: the channel was lost in transit."""
    RECEIVER_DROPPED = "receiver dropped"
    """Sender: the remote receiver was closed or dropped."""
    CLOSED = "closed"
    """Either: the local application closed or dropped this half."""
    CONNECTION_LOST = "connection lost"
    """Either: the connection went away."""


class ChannelError(AqueductError):
    """A channel ended (`reason` says how: `ENDINGS` has the table); raised by the half that can no longer go on."""

    reason = EndReason.CLOSED


class ChannelFinished(ChannelError):
    """The sender finished and every message was taken: `recv` has nothing more to give (`async for` just ends)."""

    reason = EndReason.FINISHED


class ChannelClosed(ChannelError):
    """This half was closed or dropped locally, or finished; it can no longer be used."""

    reason = EndReason.CLOSED


class ChannelCancelled(ChannelError):
    """The sender cancelled the channel."""

    reason = EndReason.CANCELLED


class ChannelLost(ChannelError):
    """The channel was lost in transit (its creating message never arrived)."""

    reason = EndReason.LOST


class ReceiverDropped(ChannelError):
    """The remote receiver was closed or dropped."""

    reason = EndReason.RECEIVER_DROPPED


class ConnectionLost(ChannelError):
    """The connection went away."""

    reason = EndReason.CONNECTION_LOST

    def __init__(self, message: str = "connection lost", code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class ConnectError(AqueductError):
    """The connection was never usable: nothing listening, no answer in time, TLS verification failed, the server
    refused this client (`AuthenticationFailed`) or speaks another protocol version, codec (`CodecMismatch`) or
    entrypoint schema (`SchemaMismatch`).

    Not a `ChannelError`: no channel existed yet. `code` is the QUIC close code when the peer sent one.
    (`aqueduct.reconnecting` retries it, as it retries a `ConnectionLost`.)"""

    def __init__(self, message: str = "connect failed", code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class AuthenticationFailed(ConnectError):
    """The server refused this client: no valid client certificate (a TLS alert during the handshake), or its
    `authenticate` callback refused the client's headers or identity (close code AUTHENTICATION_FAILED).

    Raised on a server's `authenticate` callback too, to refuse with a reason the client is told."""


class ConfigError(AqueductError):
    """Local configuration is unusable (a CA, certificate or key file missing or unreadable, a URL that is not
    aqueduct://host:port); nothing was sent."""


class ValidationError(AqueductError, TypeError):
    """A value does not fit its channel's type: refused before sending, or a received message that was dropped.

    `channel` names the channel, `path` the place in the value (`$.items[2].qty`), `expected` and `received`
    the types there. A TypeError too, as a wrong-typed argument is."""

    def __init__(self, message: str, *, channel: str = "", path: str = "$", expected: str = "",
                 received: str = "") -> None:
        super().__init__(message)
        self.channel, self.path, self.expected, self.received = channel, path, expected, received


class CodecError(AqueductError, ValueError):
    """A payload could not be encoded or decoded by the connection's codec (api/codec.py).

    From `recv` on an untyped channel: the peer sent bytes the codec refuses (the message was dropped and the
    channel goes on); a typed channel raises ValidationError for them instead."""


class Lagged(AqueductError):
    """A broadcast subscriber fell behind and `n` messages were skipped for it; the next recv goes on."""

    def __init__(self, n: int) -> None:
        super().__init__(f"lagged: {n} broadcast message(s) skipped for this subscriber")
        self.n = n


class Timeout(AqueductError, TimeoutError):
    """A `timeout=` given to send, recv or request ran out (a TimeoutError too)."""


class WouldBlock(AqueductError):
    """A non-blocking send found the peer's window full."""


class LimitExceeded(AqueductError):
    """A configured limit would be exceeded (message too large, too many channels, ...)."""


class Outcome(Enum):
    """What became of one message sent with `confirm=True`."""

    ACKED = "acked"
    """The receiving application took it (on a connection: the peer acked it, which the API does when its receiver
    takes the message from its engine, a batch ahead of `recv`, and, on a typed receiver, finds it a T: decision
    API-34)."""
    NACKED = "nacked"
    """The peer reported it lost (an unreliable message that never arrived, or a reliable one it dropped or
    refused: not a T, or a payload its codec refused)."""
    CANCELLED = "cancelled"
    """The channel was cancelled before it was taken."""
    RECEIVER_DROPPED = "receiver dropped"
    """The receiver was closed or dropped before taking it."""
    CONNECTION_LOST = "connection lost"
    """The connection ended before it was acknowledged."""
    CREATING_MESSAGE_LOST = "creating message lost"
    """The message that created this channel was lost, and the channel with it."""

    @property
    def delivered(self) -> bool:
        """Whether the message reached the receiving application."""
        return self is Outcome.ACKED


@dataclass(frozen=True)
class Ending:
    """How a channel that ended for one `EndReason` looks to the application and on the wire."""

    error: type[ChannelError]
    """What `recv` raises for it (and `send`, on a sender that ended so; a finished sender raises ChannelClosed)."""
    outcome: Outcome
    """What a message sent with `confirm=True` and still unanswered when the channel ended reports."""
    wire: str
    """The signal that carries it between the peers."""


ENDINGS: dict[EndReason, Ending] = {
    EndReason.FINISHED: Ending(ChannelFinished, Outcome.NACKED, "the sender's FIN after its last message"),
    EndReason.CANCELLED: Ending(ChannelCancelled, Outcome.CANCELLED, f"stream reset {ResetCode.CANCELLED.name} (1)"),
    EndReason.LOST: Ending(ChannelLost, Outcome.CREATING_MESSAGE_LOST, f"stream reset {ResetCode.LOST.name} (2)"),
    EndReason.RECEIVER_DROPPED: Ending(ReceiverDropped, Outcome.RECEIVER_DROPPED, "the receiver's CloseReceiver"),
    EndReason.CLOSED: Ending(ChannelClosed, Outcome.CANCELLED, "this side's close: its sender cancels, its receiver"
                             " sends CloseReceiver"),
    EndReason.CONNECTION_LOST: Ending(ConnectionLost, Outcome.CONNECTION_LOST, "the QUIC connection close (its code)"),
}
"""The one table of how a channel ends: reason -> exception raised, outcome reported, wire signal."""

OUTCOME_FOR_END: dict[EndReason, Outcome] = {reason: ending.outcome for reason, ending in ENDINGS.items()}
"""A confirmed message still unanswered when its sender ends gets the outcome of the way it ended."""

ERROR_FOR_REASON: dict[EndReason, type[ChannelError]] = {
    reason: ending.error for reason, ending in ENDINGS.items() if reason is not EndReason.FINISHED
}
"""The error of a half that ended otherwise than by a finish (a finish is StopAsyncIteration in `async for`,
ChannelFinished from `recv`, ChannelClosed on a sender)."""

__all__ = [
    "AqueductError",
    "AuthenticationFailed",
    "ChannelCancelled",
    "ChannelClosed",
    "ChannelError",
    "ChannelFinished",
    "ChannelLost",
    "CloseCode",
    "CodecError",
    "ConfigError",
    "ConnectError",
    "ConnectionLost",
    "EndReason",
    "Lagged",
    "LimitExceeded",
    "Outcome",
    "ProtocolError",
    "ReceiverDropped",
    "Timeout",
    "ValidationError",
    "WouldBlock",
]

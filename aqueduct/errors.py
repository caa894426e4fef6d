"""Errors an application sees, one type per way a channel or connection ends.

Each maps to a spec reset code or close code: CANCELLED (stream reset 1),
LOST (stream reset 2), a receiver's CloseReceiver before the sender finished
(ReceiverDropped), and the QUIC connection going away (ConnectionLost).
"""

from __future__ import annotations

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
    """A channel ended in a way other than a graceful finish."""

    reason = EndReason.CLOSED


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


class ConnectError(ConnectionLost):
    """The connection was never established: nothing listening, no answer in time, or TLS verification failed.

    A `ConnectionLost`, so code that handles a lost connection handles a failed one too."""


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
    """The receiving application took it (on a connection: the peer acknowledged it)."""
    NACKED = "nacked"
    """The peer reported it lost (an unreliable message that never arrived, or a reliable one it dropped)."""
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


OUTCOME_FOR_END: dict[EndReason, Outcome] = {
    EndReason.CANCELLED: Outcome.CANCELLED,
    EndReason.CLOSED: Outcome.CANCELLED,
    EndReason.FINISHED: Outcome.NACKED,
    EndReason.LOST: Outcome.CREATING_MESSAGE_LOST,
    EndReason.RECEIVER_DROPPED: Outcome.RECEIVER_DROPPED,
    EndReason.CONNECTION_LOST: Outcome.CONNECTION_LOST,
}
"""A confirmed message still unanswered when its sender ends gets the outcome of the way it ended."""


ERROR_FOR_REASON: dict[EndReason, type[ChannelError]] = {
    EndReason.CLOSED: ChannelClosed,
    EndReason.CANCELLED: ChannelCancelled,
    EndReason.LOST: ChannelLost,
    EndReason.RECEIVER_DROPPED: ReceiverDropped,
    EndReason.CONNECTION_LOST: ConnectionLost,
}

__all__ = [
    "ERROR_FOR_REASON",
    "AqueductError",
    "AuthenticationFailed",
    "ChannelCancelled",
    "ChannelClosed",
    "ChannelError",
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
    "ResetCode",
    "Timeout",
    "ValidationError",
    "WouldBlock",
]

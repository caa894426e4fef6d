"""The narrow transport interface: events the engine takes, commands it gives.

Stream IDs are QUIC stream IDs. The engine allocates the IDs of streams it
opens by QUIC's numbering (client bidi 0,4,8..; server bidi 1,5..; client
uni 2,6..; server uni 3,7..); a stream is opened by its first
SendStreamData. The adapter maps these 1:1 onto aioquic calls and events.
The per-message commands (SendStreamData, SendDatagram, GrantCredit) and events
(StreamDataReceived, DatagramReceived) are not frozen, to be cheap to build (a frozen
dataclass sets each field through object.__setattr__: 2-3x the cost); treat every command
and event as a value.

Spec: none (the QUIC events and commands the engine is driven by).
"""

from __future__ import annotations

from dataclasses import dataclass

# ---- events into the engine (Connection.handle_event) ----


@dataclass(slots=True, unsafe_hash=True)
class StreamDataReceived:
    """Bytes arrived on a stream; `end_stream` when the peer finished its side."""

    stream_id: int
    data: bytes
    end_stream: bool = False


@dataclass(frozen=True, slots=True)
class StreamReset:
    """The peer reset its sending side of a stream."""

    stream_id: int
    error_code: int


@dataclass(frozen=True, slots=True)
class StopSendingReceived:
    """The peer asked us to stop sending on a stream."""

    stream_id: int
    error_code: int


@dataclass(slots=True, unsafe_hash=True)
class DatagramReceived:
    """A QUIC datagram arrived."""

    data: bytes


@dataclass(frozen=True, slots=True)
class HandshakeCompleted:
    """TLS finished; on a client, `early_data_accepted` says whether 0-RTT was taken."""

    early_data_accepted: bool = False
    session_resumed: bool = False


@dataclass(frozen=True, slots=True)
class ConnectionTerminated:
    """The QUIC connection is gone (closed by either side, idle timeout, ...)."""

    error_code: int
    reason: str = ""
    by_peer: bool = True


TransportEvent = (
    StreamDataReceived
    | StreamReset
    | StopSendingReceived
    | DatagramReceived
    | HandshakeCompleted
    | ConnectionTerminated
)


# ---- commands out of the engine (Connection.commands) ----


@dataclass(slots=True, unsafe_hash=True)
class SendStreamData:
    """Write bytes on a stream (opening it if new); finish it if `end_stream`."""

    stream_id: int
    data: bytes
    end_stream: bool = False


@dataclass(frozen=True, slots=True)
class ResetStream:
    """Reset our sending side of a stream with an Aqueduct reset code."""

    stream_id: int
    error_code: int


@dataclass(frozen=True, slots=True)
class StopSending:
    """Ask the peer to stop sending on a stream."""

    stream_id: int
    error_code: int


@dataclass(slots=True, unsafe_hash=True)
class SendDatagram:
    """Send one QUIC datagram."""

    data: bytes


@dataclass(frozen=True, slots=True)
class CloseConnection:
    """Close the QUIC connection with an application error code."""

    error_code: int
    reason: str


@dataclass(slots=True, unsafe_hash=True)
class GrantCredit:
    """The application consumed `nbytes` received on `stream_id`: flow-control credit may grow by that much."""

    stream_id: int
    nbytes: int


TransportCommand = SendStreamData | ResetStream | StopSending | SendDatagram | CloseConnection | GrantCredit


def is_bidi(stream_id: int) -> bool:
    """Whether a QUIC stream ID is bidirectional."""
    return not stream_id & 2


def is_client_initiated(stream_id: int) -> bool:
    """Whether a QUIC stream ID was opened by the client."""
    return not stream_id & 1

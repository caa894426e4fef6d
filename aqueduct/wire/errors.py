"""Protocol errors and the connection close codes they map to.

Every malformed input anywhere in the stack raises `ProtocolError`; the
connection layer closes the QUIC connection with `error.code` and the
error's message as the reason. Codes are Aqueduct application error codes
(QUIC CONNECTION_CLOSE of type 0x1d); decisions WIRE-14, WIRE-15.
"""

from __future__ import annotations

from enum import IntEnum


class CloseCode(IntEnum):
    """Application close codes of an Aqueduct connection."""

    NO_ERROR = 0
    PROTOCOL_VIOLATION = 1
    FRAME_ENCODING = 2
    VERSION_MISMATCH = 3
    LIMIT_EXCEEDED = 4
    DATAGRAMS_UNSUPPORTED = 5
    CODEC_MISMATCH = 6
    INTERNAL_ERROR = 7
    SHUTTING_DOWN = 8
    """The server is draining (Server.drain): reconnect later or elsewhere."""
    AUTHENTICATION_FAILED = 9
    """The server refused the client: its `authenticate` callback raised (api/auth.py)."""
    SCHEMA_MISMATCH = 10
    """The peers' entrypoint schemas differ (api/schema.py)."""


class AqueductError(Exception):
    """Base of every error aqueduct raises to applications (re-exported as `aqueduct.AqueductError`).

    It lives in the wire layer, the bottom floor, so that the wire's own ProtocolError can be one."""


class ProtocolError(AqueductError):
    """The peer broke the Aqueduct spec; the connection must close with `code`."""

    def __init__(self, message: str, code: CloseCode = CloseCode.PROTOCOL_VIOLATION) -> None:
        super().__init__(message)
        self.code = code

    @property
    def reason(self) -> str:
        """The human-readable reason sent in CONNECTION_CLOSE."""
        return str(self)


def encoding_error(message: str) -> ProtocolError:
    """A ProtocolError for bytes that do not decode as frames."""
    return ProtocolError(message, CloseCode.FRAME_ENCODING)

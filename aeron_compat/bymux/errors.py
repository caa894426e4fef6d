"""Errors of bymux, one type per way things go wrong.

`ConnectionTerminated` is the peer breaking a rule the spec punishes with
terminating the whole connection; its `rule` names which (see `Rule`). The
endpoint that raises it is closed for good. `UsageError` is local misuse (an
operation the spec forbids us to send); it changes no state. `StreamStopped`
and `ConnectionLost` reach applications through the stream API.
"""

from __future__ import annotations

from enum import Enum


class Rule(Enum):
    """A termination rule of the spec, by a short stable name."""

    UNDEFINED_PACKET_TYPE = "undefined-packet-type"
    UNKNOWN_STREAM = "unknown-stream"
    CREATE_ACTIVE_ID = "create-active-id"
    CREATE_WRONG_PARITY = "create-wrong-parity"
    CREATE_WITHOUT_GLOBAL_CREDIT = "create-without-global-credit"
    CREATE_AFTER_GLOBAL_CLOSE = "create-after-global-close"
    WRITE_BEYOND_CREDIT = "write-beyond-credit"
    WRITE_AFTER_CLOSE = "write-after-close"
    CLOSE_AFTER_CLOSE = "close-after-close"
    CREDIT_OVERFLOW = "credit-overflow"
    CREDIT_ON_INFINITE = "credit-on-infinite"
    CREDIT_AFTER_STOP_READ = "credit-after-stop-read"
    STOP_READ_AFTER_STOP_READ = "stop-read-after-stop-read"
    GLOBAL_CLOSE_AFTER_GLOBAL_CLOSE = "global-close-after-global-close"
    GLOBAL_CREDIT_OVERFLOW = "global-credit-overflow"
    GLOBAL_CREDIT_ON_INFINITE = "global-credit-on-infinite"
    GLOBAL_CREDIT_AFTER_GLOBAL_STOP_READ = "global-credit-after-global-stop-read"
    GLOBAL_STOP_READ_AFTER_GLOBAL_STOP_READ = "global-stop-read-after-global-stop-read"
    GLOBAL_PING_AFTER_END = "global-ping-after-end"
    GLOBAL_PONG_AFTER_END = "global-pong-after-end"


class BymuxError(Exception):
    """Base of every bymux error."""


class ConnectionLost(BymuxError):
    """The underlying byte channel ended or the connection was terminated."""


class ConnectionTerminated(ConnectionLost):
    """The peer broke a rule whose breach terminates the connection."""

    def __init__(self, rule: Rule, detail: str = "") -> None:
        self.rule = rule
        self.detail = detail
        super().__init__(f"{rule.value}: {detail}" if detail else rule.value)


class UsageError(BymuxError):
    """A local call the spec does not allow in the current state; nothing changed."""


class StreamStopped(BymuxError):
    """The peer stopped reading this stream (or we closed it): no more writes."""

# Result codes, poll actions and frame constants shared by every aeron_compat module.
# Values mirror Aeron's so ported code that compares against the numbers keeps working:
# a negative offer result is a code, a positive one is the new stream position.
"""Aeron's result codes, controlled-poll actions and data-frame constants."""

from __future__ import annotations

from enum import IntEnum

HEADER_LENGTH = 32
"""Length of a data frame header: every fragment costs this much on top of its payload."""

FRAME_ALIGNMENT = 32
"""Frames start at multiples of this many bytes; positions advance by aligned frame lengths."""

BEGIN_FLAG = 0x80
"""Fragment begins a message."""

END_FLAG = 0x40
"""Fragment ends a message."""

UNFRAGMENTED = BEGIN_FLAG | END_FLAG
"""Flags of a message carried whole in one fragment."""

EOS_FLAG = 0x20
"""End of stream (only on heartbeats)."""

HDR_TYPE_PAD = 0x00
"""Padding frame type: fills the end of a term or an aborted claim; never given to handlers."""

HDR_TYPE_DATA = 0x01
"""Data frame type."""

DEFAULT_MTU = 1408
"""MTU when the channel does not say: payload per fragment is this minus the header."""

DEFAULT_TERM_LENGTH = 1 << 20
"""Term length when the channel does not say (Aeron's 16 MiB is needlessly big for Python)."""

MAX_MESSAGE_CAP = 16 * 1024 * 1024
"""Upper bound of a message whatever the term length, as in Aeron."""


class PublicationResult(IntEnum):
    """Negative results of `Publication.offer` / `try_claim`."""

    NOT_CONNECTED = -1
    BACK_PRESSURED = -2
    ADMIN_ACTION = -3
    CLOSED = -4
    MAX_POSITION_EXCEEDED = -5


NOT_CONNECTED = PublicationResult.NOT_CONNECTED
"""`offer` found no subscriber image to publish to."""
BACK_PRESSURED = PublicationResult.BACK_PRESSURED
"""`offer` would pass the publication's limit (the slowest image's position plus the window): retry later."""
ADMIN_ACTION = PublicationResult.ADMIN_ACTION
"""The message did not fit the rest of the term, which became padding: retry at once."""
CLOSED = PublicationResult.CLOSED
"""The publication is closed."""
MAX_POSITION_EXCEEDED = PublicationResult.MAX_POSITION_EXCEEDED
"""The publication reached the highest position its terms can address."""


class Action(IntEnum):
    """What a controlled fragment handler tells the poll loop to do with the fragment it just saw."""

    ABORT = 1
    """Do not consume this fragment: stop, and deliver it again on the next poll."""
    BREAK = 2
    """Consume this fragment and stop polling."""
    COMMIT = 3
    """Consume this fragment and commit the position now; keep polling."""
    CONTINUE = 4
    """Consume this fragment and keep polling."""


class AeronError(Exception):
    """Base of aeron_compat's own errors."""


class RegistrationError(AeronError):
    """A publication or subscription could not be added (bad channel, endpoint in use, ...)."""


class MessageTooLongError(AeronError, ValueError):
    """An offered message is longer than the publication's `max_message_length`."""


class PublicationClosedError(AeronError):
    """`send()` found the publication closed."""


def align(length: int, alignment: int = FRAME_ALIGNMENT) -> int:
    """`length` rounded up to a multiple of `alignment` (a power of two)."""
    return (length + alignment - 1) & ~(alignment - 1)

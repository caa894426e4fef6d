"""Aeron UDP frames: every frame type as a frozen dataclass, plus the wire's layouts and constants.

Theory: a datagram carries one or more frames, each starting with an 8-byte
header (length, version, flags, type) and aligned to 32 bytes. Each dataclass
here is one frame as the codec (native/codec.py) decodes it and encodes it;
DATA frames with length 0 are `Heartbeat`s, PAD frames say how much of the
term they fill, and types this package does not interpret are `UnknownFrame`.
`AeronWireError` is the one error malformed input raises. Layouts follow what
real Aeron drivers send (36/44-byte SM, 40-byte ERR with error code); see
specs/decisions/aeron.md.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum

FRAME_ALIGNMENT = 32
VERSION = 0


class FrameType(IntEnum):
    """Aeron frame types (the type field, read unsigned)."""

    PAD = 0x00
    DATA = 0x01
    NAK = 0x02
    SM = 0x03
    ERR = 0x04
    SETUP = 0x05
    RTTM = 0x06
    RES = 0x07
    ATS_DATA = 0x08
    ATS_SETUP = 0x09
    ATS_SM = 0x0A
    RSP_SETUP = 0x0B
    EXT = 0xFFFF


class Flags:
    """Flag bits per frame type."""

    BEGIN = 0x80
    END = 0x40
    EOS = 0x20
    REVOKED = 0x10
    UNFRAGMENTED = 0xC0
    SM_SETUP = 0x80
    SM_EOS = 0x40
    SETUP_SEND_RESPONSE = 0x80
    SETUP_GROUP = 0x40
    RTTM_REPLY = 0x80
    ERR_HAS_GROUP_TAG = 0x08
    RES_SELF = 0x80


class AeronWireError(ValueError):
    """A datagram or frame that is not valid Aeron; the datagram must be dropped."""


HEADER = struct.Struct("<iBBH")
DATA_HEADER = struct.Struct("<iBBHiiiiq")
SETUP_HEADER = struct.Struct("<iBBHiiiiiiii")
NAK_HEADER = struct.Struct("<iBBHiiiii")
SM_HEADER = struct.Struct("<iBBHiiiii")
SM_RECEIVER_ID = struct.Struct("<q")
ERR_HEADER = struct.Struct("<iBBHiiqqii")
RTTM_HEADER = struct.Struct("<iBBHiiqqq")
RSP_SETUP_HEADER = struct.Struct("<iBBHiii")
RES_ENTRY = struct.Struct("<BBHi")
RES_NAME_LENGTH = struct.Struct("<h")

DATA_HEADER_LENGTH = DATA_HEADER.size
SM_LENGTHS = (SM_HEADER.size, SM_HEADER.size + 8, SM_HEADER.size + 16)
RES_ADDRESS_LENGTHS = {0x01: 4, 0x02: 16}


def align(length: int, alignment: int = FRAME_ALIGNMENT) -> int:
    """Round `length` up to a multiple of `alignment` (a power of two)."""
    return (length + alignment - 1) & ~(alignment - 1)


@dataclass(frozen=True, slots=True)
class DataFrame:
    """DATA: one fragment (B/E flags) of a message at a term offset."""

    term_offset: int
    session_id: int
    stream_id: int
    term_id: int
    payload: bytes = b""
    flags: int = Flags.UNFRAGMENTED
    reserved_value: int = 0


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """DATA with length 0: the highest sent position; EOS flag at end of stream."""

    term_offset: int
    session_id: int
    stream_id: int
    term_id: int
    flags: int = Flags.UNFRAGMENTED
    reserved_value: int = 0

    @property
    def end_of_stream(self) -> bool:
        """Whether this heartbeat announces end of stream."""
        return bool(self.flags & Flags.EOS)


@dataclass(frozen=True, slots=True)
class PadFrame:
    """PAD: fills `length` bytes of the term from `term_offset`; only the header travels."""

    term_offset: int
    session_id: int
    stream_id: int
    term_id: int
    length: int = DATA_HEADER_LENGTH
    flags: int = Flags.UNFRAGMENTED
    reserved_value: int = 0


@dataclass(frozen=True, slots=True)
class Nak:
    """NAK: the receiver asks for `length` bytes from (term_id, term_offset) again."""

    session_id: int
    stream_id: int
    term_id: int
    term_offset: int
    length: int
    flags: int = 0


@dataclass(frozen=True, slots=True)
class StatusMessage:
    """SM: consumption position and receiver window; 28, 36 (receiver id) or 44 (group tag) bytes."""

    session_id: int
    stream_id: int
    consumption_term_id: int
    consumption_term_offset: int
    receiver_window: int
    receiver_id: int | None = 0
    group_tag: int | None = None
    flags: int = 0


@dataclass(frozen=True, slots=True)
class ErrorFrame:
    """ERR as real drivers send it: session, stream, receiver id, group tag, code and text."""

    session_id: int
    stream_id: int
    receiver_id: int
    group_tag: int
    error_code: int
    message: bytes = b""
    flags: int = 0


@dataclass(frozen=True, slots=True)
class Setup:
    """SETUP: stream parameters the receiver needs to build an image."""

    term_offset: int
    session_id: int
    stream_id: int
    initial_term_id: int
    active_term_id: int
    term_length: int
    mtu: int
    ttl: int = 0
    flags: int = 0


@dataclass(frozen=True, slots=True)
class Rttm:
    """RTTM: an RTT probe (REPLY flag asks for an echo) or its echo."""

    session_id: int
    stream_id: int
    echo_timestamp: int
    reception_delta: int
    receiver_id: int
    flags: int = 0


@dataclass(frozen=True, slots=True)
class ResEntry:
    """One resolved name in a RES frame."""

    res_type: int
    flags: int
    udp_port: int
    age_ms: int
    address: bytes
    name: bytes


@dataclass(frozen=True, slots=True)
class Resolution:
    """RES: name resolution entries exchanged between drivers."""

    entries: tuple[ResEntry, ...] = ()
    flags: int = 0


@dataclass(frozen=True, slots=True)
class ResponseSetup:
    """RSP_SETUP (0x0B, real drivers only): response channel set-up."""

    session_id: int
    stream_id: int
    response_session_id: int
    flags: int = 0


@dataclass(frozen=True, slots=True)
class UnknownFrame:
    """A frame of a type this codec does not interpret (ATS, EXT, future types): ignore it."""

    frame_type: int
    flags: int
    body: bytes = field(default=b"")


Frame = (
    DataFrame
    | Heartbeat
    | PadFrame
    | Nak
    | StatusMessage
    | ErrorFrame
    | Setup
    | Rttm
    | Resolution
    | ResponseSetup
    | UnknownFrame
)

"""Aqueduct frames: one dataclass per frame type, and their codec.

Frames are frozen, except Message: one is built per message received, and a
frozen dataclass costs several times more to construct; treat it as frozen.

`encode_frame` writes one frame; `read_frame(buf, pos, limit)` reads the
frame starting at `pos` and returns it with the position after it, raising
`Incomplete` when the buffer ends early (see reader.py for whole-buffer and
incremental decoding) and ProtocolError for malformed bytes. `limit` is the
largest length any byte array inside a frame may declare; a ConnectionControl's
header data is read under its own caps (`headers`, see headers.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum

from .errors import CloseCode, ProtocolError, encoding_error
from .headers import DEFAULT_HEADER_LIMITS, HeaderLimits, Headers, encode_headers, read_headers
from .ranges import encode_ranges, read_ranges
from .varint import (
    SMALL_VARINTS,
    Incomplete,
    encode_bytes,
    encode_int_array,
    encode_varint,
    read_bytes,
    read_int_array,
    read_varint,
)

PROTOCOL_VERSION = "0.0.0-AFTER"
VERSION_MAGIC = bytes([80, 95, 166, 96, 15, 64, 142])
VERSION_TEXT = b"AQUEDUCT"
_VERSION_PREFIX_LEN = 1 + len(VERSION_MAGIC) + len(VERSION_TEXT)


class FrameType(IntEnum):
    """Frame type bytes."""

    VERSION = 239
    CONNECTION_CONTROL = 1
    CHANNEL_CONTROL = 2
    MESSAGE = 3
    SENT_UNRELIABLE = 4
    ACK_RELIABLE = 5
    ACK_NACK_UNRELIABLE = 6
    FINISH_SENDER = 7
    CLOSE_RECEIVER = 8
    CLOSED_CHANNEL_LOST = 9


@dataclass(frozen=True, slots=True)
class Version:
    """First frame of a stream or datagram sent before the peer's headers are known."""

    version: str = PROTOCOL_VERSION


@dataclass(frozen=True, slots=True)
class ConnectionControl:
    """A side's connection headers, sent once on the connection control stream."""

    headers: Headers = ()


@dataclass(frozen=True, slots=True)
class ChannelControl:
    """Opens a channel control stream for `channel`."""

    channel: int


@dataclass(slots=True, unsafe_hash=True)
class Message:
    """One message on `channel`, with the IDs of channels it attaches."""

    channel: int
    number: int
    attachments: tuple[int, ...] = ()
    payload: bytes = b""


@dataclass(frozen=True, slots=True)
class SentUnreliable:
    """How many unreliable messages were sent since the previous SentUnreliable."""

    count: int


@dataclass(frozen=True, slots=True)
class AckReliable:
    """Acks of reliable messages as range ints (negative runs: not yet known)."""

    ranges: tuple[int, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class AckNackUnreliable:
    """Acks (positive runs) and committing nacks (negative runs) of unreliable messages."""

    ranges: tuple[int, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class FinishSender:
    """The sender finished after sending `reliable_count` reliable messages."""

    reliable_count: int


@dataclass(frozen=True, slots=True)
class CloseReceiver:
    """The receiver's final reliable acks and nacks as range ints."""

    ranges: tuple[int, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class ClosedChannelLost:
    """A channel whose control stream is gone was found lost in transit."""

    channel: int


Frame = (
    Version
    | ConnectionControl
    | ChannelControl
    | Message
    | SentUnreliable
    | AckReliable
    | AckNackUnreliable
    | FinishSender
    | CloseReceiver
    | ClosedChannelLost
)

FRAME_TYPES: dict[type, FrameType] = {
    Version: FrameType.VERSION,
    ConnectionControl: FrameType.CONNECTION_CONTROL,
    ChannelControl: FrameType.CHANNEL_CONTROL,
    Message: FrameType.MESSAGE,
    SentUnreliable: FrameType.SENT_UNRELIABLE,
    AckReliable: FrameType.ACK_RELIABLE,
    AckNackUnreliable: FrameType.ACK_NACK_UNRELIABLE,
    FinishSender: FrameType.FINISH_SENDER,
    CloseReceiver: FrameType.CLOSE_RECEIVER,
    ClosedChannelLost: FrameType.CLOSED_CHANNEL_LOST,
}

_VERSION_FRAME = bytes([FrameType.VERSION]) + VERSION_MAGIC + VERSION_TEXT
_MESSAGE_BYTE = bytes([FrameType.MESSAGE])
_NO_ATTACHMENTS_LEN = [b"\x00" + v for v in SMALL_VARINTS]
"""A Message frame's empty attachment array followed by a payload length under 128."""


def message_head(channel: int) -> bytes:
    """The bytes every Message frame on `channel` starts with: the type byte and the channel ID (a sender keeps
    them for `plain_message_prefix`)."""
    return _MESSAGE_BYTE + encode_varint(channel)


_LOW_SEVEN = [bytes([i | 0x80]) for i in range(128)]
"""A var len int's first byte when more follow, by its low seven bits."""
_HIGH_BITS: dict[int, bytes] = {}
"""encode_varint(n >> 7) for the message numbers n seen lately (at most _HIGH_BITS_KEPT): a sender's numbers
change above their low seven bits once every 128 messages."""
_HIGH_BITS_KEPT = 1024


def plain_message_prefix(head: bytes, number: int, size: int) -> bytes:
    """The bytes before the payload of a Message without attachments: `head` (from `message_head`), the message
    number, the empty attachment array and the payload's length, `size` (the per-message hot path: small ints from
    tables, a large number's bits above the low seven from a small cache)."""
    if number < 128:
        num = SMALL_VARINTS[number]
    else:
        high = _HIGH_BITS.get(number >> 7)
        if high is None:
            if len(_HIGH_BITS) >= _HIGH_BITS_KEPT:
                _HIGH_BITS.clear()
            high = _HIGH_BITS[number >> 7] = encode_varint(number >> 7)
        num = _LOW_SEVEN[number & 0x7F] + high
    return head + num + (_NO_ATTACHMENTS_LEN[size] if size < 128 else b"\x00" + encode_varint(size))


def encode_message(channel: int, number: int, attachments: Sequence[int], payload: bytes) -> bytes:
    """Encode a Message frame without building the dataclass (the hot path)."""
    return b"".join(
        (
            _MESSAGE_BYTE,
            encode_varint(channel),
            encode_varint(number),
            encode_int_array(attachments),
            encode_varint(len(payload)),
            payload,
        )
    )


def encode_frame(frame: Frame) -> bytes:
    """Encode one frame."""
    match frame:
        case Message(channel, number, attachments, payload):
            return encode_message(channel, number, attachments, payload)
        case Version(version):
            return _VERSION_FRAME + encode_bytes(version.encode("ascii"))
        case ConnectionControl(headers):
            return b"\x01" + encode_headers(headers)
        case ChannelControl(channel):
            return b"\x02" + encode_varint(channel)
        case SentUnreliable(count):
            return b"\x04" + encode_varint(count)
        case AckReliable(ranges):
            return b"\x05" + encode_ranges(ranges)
        case AckNackUnreliable(ranges):
            return b"\x06" + encode_ranges(ranges)
        case FinishSender(count):
            return b"\x07" + encode_varint(count)
        case CloseReceiver(ranges):
            return b"\x08" + encode_ranges(ranges)
        case ClosedChannelLost(channel):
            return b"\x09" + encode_varint(channel)
    raise TypeError(f"not a frame: {frame!r}")


def encode_frames(frames: Sequence[Frame]) -> bytes:
    """Encode frames back to back."""
    return b"".join(encode_frame(f) for f in frames)


def _read_version(buf: bytes, pos: int, limit: int) -> tuple[Frame, int]:
    end = pos + _VERSION_PREFIX_LEN
    head = buf[pos:end]
    if head != _VERSION_FRAME[: len(head)]:
        first_bad = next(i for i, (a, b) in enumerate(zip(head, _VERSION_FRAME, strict=False)) if a != b)
        bad = "magic bytes" if first_bad <= len(VERSION_MAGIC) else "text"
        raise encoding_error(f"Version frame at offset {pos} has wrong {bad}")
    if len(head) < _VERSION_PREFIX_LEN:
        raise Incomplete(end)
    raw, end = read_bytes(buf, end, min(limit, 255), "version string")
    if not raw.isascii():
        raise encoding_error(f"Version frame at offset {pos} has a non-ASCII version")
    return Version(raw.decode("ascii")), end


def _read_connection_control(buf: bytes, pos: int, limit: int, limits: HeaderLimits) -> tuple[Frame, int]:
    if limit < limits.total_bytes:  # (a frame is never longer than `limit`, header data included)
        limits = replace(limits, total_bytes=limit)
    headers, end = read_headers(buf, pos + 1, limits)
    return ConnectionControl(headers), end


def _reader_int(cls: Callable[[int], Frame]) -> Callable[[bytes, int, int], tuple[Frame, int]]:
    def read(buf: bytes, pos: int, limit: int) -> tuple[Frame, int]:
        value, end = read_varint(buf, pos + 1)
        return cls(value), end

    return read


def _reader_ranges(cls: Callable[[tuple[int, ...]], Frame]) -> Callable[[bytes, int, int], tuple[Frame, int]]:
    def read(buf: bytes, pos: int, limit: int) -> tuple[Frame, int]:
        ranges, end = read_ranges(buf, pos + 1, limit)
        return cls(ranges), end

    return read


def _read_message(buf: bytes, pos: int, limit: int) -> tuple[Frame, int]:
    channel, pos = read_varint(buf, pos + 1)
    number, pos = read_varint(buf, pos)
    if pos < len(buf) and buf[pos] == 0:  # no attachments: the common case, skip the general path
        attachments: tuple[int, ...] = ()
        pos += 1
    else:
        attachments, pos = read_int_array(buf, pos, limit, "message attachments")
    payload, pos = read_bytes(buf, pos, limit, "message payload")
    return Message(channel, number, attachments, payload), pos


_READERS: dict[int, Callable[[bytes, int, int], tuple[Frame, int]]] = {
    FrameType.VERSION: _read_version,
    FrameType.CHANNEL_CONTROL: _reader_int(ChannelControl),
    FrameType.MESSAGE: _read_message,
    FrameType.SENT_UNRELIABLE: _reader_int(SentUnreliable),
    FrameType.ACK_RELIABLE: _reader_ranges(AckReliable),
    FrameType.ACK_NACK_UNRELIABLE: _reader_ranges(AckNackUnreliable),
    FrameType.FINISH_SENDER: _reader_int(FinishSender),
    FrameType.CLOSE_RECEIVER: _reader_ranges(CloseReceiver),
    FrameType.CLOSED_CHANNEL_LOST: _reader_int(ClosedChannelLost),
}


def read_frame(buf: bytes, pos: int, limit: int, headers: HeaderLimits = DEFAULT_HEADER_LIMITS) -> tuple[Frame, int]:
    """Read the frame at `pos`; return it and the position after it."""
    try:
        kind = buf[pos]
    except IndexError:
        raise Incomplete(pos + 1) from None
    if kind == FrameType.CONNECTION_CONTROL:
        return _read_connection_control(buf, pos, limit, headers)
    reader = _READERS.get(kind)
    if reader is None:
        raise ProtocolError(f"unknown frame type {kind} at offset {pos}", CloseCode.FRAME_ENCODING)
    return reader(buf, pos, limit)

"""bymux packets to and from bytes.

Theory of operation: every packet opens with one header byte. We read the
spec's bits first-is-most-significant (decision BYMUX-1), so the
byte is ``type << 5 | global << 4 | id_width << 2 | value_width`` where a
width code w means 2**w bytes, big-endian. Stream packets carry the id after
the header; Credit then carries an amount and Write a length followed by that
many data bytes. Global packets carry no id; global Credit carries an amount
(width from the low bits) and global Write the id it creates (width from the
low bits too). Bits the spec calls ignored are ignored when decoding and
written as zero. Decoders take any width; encoders write the smallest.

`decode_head` parses only the fixed part of a packet; a Write's data bytes are
left to the caller, so a long Write never has to be buffered whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

MAX_U64 = (1 << 64) - 1
MAX_HEAD_SIZE = 1 + 8 + 8


class PacketType(IntEnum):
    """The six packet types; 6 and 7 are undefined."""

    CREDIT = 0
    WRITE = 1
    PING = 2
    PONG = 3
    CLOSE = 4
    STOP_READ = 5


class UndefinedPacketType(ValueError):
    """The header byte names packet type 6 or 7."""


@dataclass(frozen=True)
class PacketHead:
    """The fixed part of a packet.

    `stream_id` is None for a global packet. `value` is the credit amount
    (Credit), the data length (stream Write), the created id (global Write),
    and 0 otherwise.
    """

    type: PacketType
    stream_id: int | None
    value: int = 0

    @property
    def is_global(self) -> bool:
        """Whether the packet applies to the whole connection."""
        return self.stream_id is None


def width_code(value: int) -> int:
    """The smallest width code whose width holds `value` (0..2**64-1)."""
    if not 0 <= value <= MAX_U64:
        raise ValueError(f"{value} does not fit 64 bits")
    if value < 1 << 8:
        return 0
    if value < 1 << 16:
        return 1
    if value < 1 << 32:
        return 2
    return 3


def _int(value: int) -> tuple[int, bytes]:
    code = width_code(value)
    return code, value.to_bytes(1 << code, "big")


def encode_head(head: PacketHead) -> bytes:
    """Encode the fixed part of a packet with minimal widths."""
    has_value = head.type in (PacketType.CREDIT, PacketType.WRITE)
    if head.stream_id is None:
        if not has_value:
            return bytes([head.type << 5 | 1 << 4])
        vcode, vbytes = _int(head.value)
        return bytes([head.type << 5 | 1 << 4 | vcode]) + vbytes
    icode, ibytes = _int(head.stream_id)
    if not has_value:
        return bytes([head.type << 5 | icode << 2]) + ibytes
    vcode, vbytes = _int(head.value)
    return bytes([head.type << 5 | icode << 2 | vcode]) + ibytes + vbytes


def decode_head(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[PacketHead, int] | None:
    """Parse one packet head at `pos`: (head, position after it), or None if incomplete.

    Raises UndefinedPacketType as soon as the header byte is available.
    """
    end = len(buf)
    if pos >= end:
        return None
    header = buf[pos]
    type_code = header >> 5
    if type_code > PacketType.STOP_READ:
        raise UndefinedPacketType(f"packet type {type_code} (header 0x{header:02x})")
    ptype = PacketType(type_code)
    is_global = bool(header & 0x10)
    has_value = ptype in (PacketType.CREDIT, PacketType.WRITE)
    pos += 1
    stream_id: int | None = None
    if not is_global:
        width = 1 << ((header >> 2) & 3)
        if pos + width > end:
            return None
        stream_id = int.from_bytes(buf[pos : pos + width], "big")
        pos += width
    value = 0
    if has_value:
        width = 1 << (header & 3)
        if pos + width > end:
            return None
        value = int.from_bytes(buf[pos : pos + width], "big")
        pos += width
    return PacketHead(ptype, stream_id, value), pos

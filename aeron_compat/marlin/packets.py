"""Marlin Stream packet codec: every packet kind as a frozen dataclass, two wire profiles.

Theory: a datagram is one packet: version byte, type byte, the sender's
connection id, the receiver's connection id, then a type-specific body.
Profile "seed" follows udp-stream-protocol.txt: big-endian fields, DATA body
stream id (2) / packet number (8) / offset (8) / length (2), DIAL with a zero
destination id and no payload. Profile "openweaver" follows the C++ reference:
little-endian fields, DATA body packet number (8) / stream id (2) / offset (8)
/ length (2) followed after the data by a 28-byte trailer (AEAD tag and nonce
room, present even with encryption off), DIAL and DIALCONF carrying opaque
key-exchange bytes. ACK bodies
are the same in both: entry count N (2), largest acked (8), then N 8-byte
entries alternating range, gap, range... where a range counts packets
downward from the current high mark (so a range of 1 acks only `largest`).
`decode` raises `StreamWireError` (and nothing else) for anything malformed,
including DATA longer than the caller's `max_data`;
`encode` is its exact inverse for every packet `decode` returns.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

from aqueduct.errors import AqueductError

Profile = Literal["seed", "openweaver"]
PROFILES: tuple[Profile, ...] = ("seed", "openweaver")
VERSION = 0
MAX_ACK_ENTRIES = 0xFFFF
U64 = (1 << 64) - 1


class PacketType(IntEnum):
    """The type byte."""

    DATA = 0x00
    DATA_FIN = 0x01
    ACK = 0x02
    DIAL = 0x03
    DIALCONF = 0x04
    CONF = 0x05
    RST = 0x06


class StreamWireError(AqueductError):
    """A datagram that is not a valid Stream packet in the given profile; it must be dropped."""


@dataclass(frozen=True, slots=True)
class Data:
    """DATA, or DATA+FIN when `fin`: `len(data)` bytes of stream `stream_id` at `offset`."""

    src_conn_id: int
    dst_conn_id: int
    stream_id: int
    packet_number: int
    offset: int
    data: bytes
    fin: bool = False
    trailer: bytes = b""  # openweaver only: 28 bytes after the data (zeros when sent unencrypted)


@dataclass(frozen=True, slots=True)
class Ack:
    """ACK: `entries` alternate range, gap, range... counted down from `largest`."""

    src_conn_id: int
    dst_conn_id: int
    largest: int
    entries: tuple[int, ...]

    def acked(self, floor: int = 0) -> list[tuple[int, int]]:
        """The acked packet numbers as inclusive (low, high) pairs, highest first, down to `floor`.

        Ranges wholly below `floor` are left out (a sender asks only down to its oldest unacked
        packet: an ACK repeats up to 65 ranges, most of them settled long ago).
        """
        out: list[tuple[int, int]] = []
        high = self.largest
        for i, n in enumerate(self.entries):
            if high < floor:
                break
            if n > high + 1:
                raise StreamWireError("ACK ranges run below packet number 0")
            if i % 2 == 0 and n:
                out.append((high - n + 1, high))
            high -= n
        return out


@dataclass(frozen=True, slots=True)
class Dial:
    """DIAL: opens a connection; `payload` is key-exchange material (openweaver only)."""

    src_conn_id: int
    dst_conn_id: int = 0
    payload: bytes = b""


@dataclass(frozen=True, slots=True)
class DialConf:
    """DIALCONF: answers a DIAL with the answerer's id; `payload` as in `Dial`."""

    src_conn_id: int
    dst_conn_id: int
    payload: bytes = b""


@dataclass(frozen=True, slots=True)
class Conf:
    """CONF: completes the handshake."""

    src_conn_id: int
    dst_conn_id: int


@dataclass(frozen=True, slots=True)
class Rst:
    """RST: the receiver knows no connection with these ids."""

    src_conn_id: int
    dst_conn_id: int


Packet = Data | Ack | Dial | DialConf | Conf | Rst

_HEAD = {"seed": struct.Struct(">BBII"), "openweaver": struct.Struct("<BBII")}
_DATA = {"seed": struct.Struct(">HQQH"), "openweaver": struct.Struct("<QHQH")}
_ACK = {"seed": struct.Struct(">HQ"), "openweaver": struct.Struct("<HQ")}
_ENDIAN = {"seed": ">", "openweaver": "<"}
HEADER_SIZE = 10
OW_TRAILER = 28  # crypto_aead_aes256gcm_ABYTES + 12-byte nonce
DATA_HEADER_SIZE = HEADER_SIZE + 20
ACK_HEADER_SIZE = HEADER_SIZE + 10


def _check(profile: str) -> Profile:
    if profile not in PROFILES:
        raise ValueError(f"unknown Stream profile {profile!r}")
    return profile


def encode(packet: Packet, profile: Profile = "seed") -> bytes:
    """The datagram carrying `packet` in `profile`."""
    p = _check(profile)
    head = _HEAD[p]
    if isinstance(packet, Data):
        kind = PacketType.DATA_FIN if packet.fin else PacketType.DATA
        if p == "seed":
            body = _DATA[p].pack(packet.stream_id, packet.packet_number, packet.offset, len(packet.data))
        else:
            body = _DATA[p].pack(packet.packet_number, packet.stream_id, packet.offset, len(packet.data))
        trailer = b""
        if p == "openweaver":
            trailer = packet.trailer or bytes(OW_TRAILER)
            if len(trailer) != OW_TRAILER:
                raise ValueError(f"an openweaver DATA trailer is {OW_TRAILER} bytes")
        elif packet.trailer:
            raise ValueError("seed DATA has no trailer")
        return head.pack(VERSION, kind, packet.src_conn_id, packet.dst_conn_id) + body + packet.data + trailer
    if isinstance(packet, Ack):
        n = len(packet.entries)
        return (head.pack(VERSION, PacketType.ACK, packet.src_conn_id, packet.dst_conn_id)
                + _ACK[p].pack(n, packet.largest) + struct.pack(f"{_ENDIAN[p]}{n}Q", *packet.entries))
    if isinstance(packet, Dial | DialConf):
        kind = PacketType.DIAL if isinstance(packet, Dial) else PacketType.DIALCONF
        if p == "seed" and packet.payload:
            raise ValueError("the seed profile's DIAL/DIALCONF carry no payload")
        return head.pack(VERSION, kind, packet.src_conn_id, packet.dst_conn_id) + packet.payload
    kind = PacketType.CONF if isinstance(packet, Conf) else PacketType.RST
    return head.pack(VERSION, kind, packet.src_conn_id, packet.dst_conn_id)


def decode(datagram: bytes, profile: Profile = "seed", max_data: int | None = None) -> Packet:
    """The packet in `datagram`; raises `StreamWireError` if it is not one.

    `max_data` caps a DATA packet's length (an endpoint passes its `max_payload`: a longer DATA is
    refused here, before any of it is buffered); None leaves it to the 16-bit length field.
    """
    p = _check(profile)
    if len(datagram) < HEADER_SIZE:
        raise StreamWireError(f"datagram of {len(datagram)} bytes is shorter than the header")
    version, kind, src, dst = _HEAD[p].unpack_from(datagram)
    if version != VERSION:
        raise StreamWireError(f"unknown version {version}")
    rest = len(datagram) - HEADER_SIZE
    if kind in (PacketType.DATA, PacketType.DATA_FIN):
        if rest < 20:
            raise StreamWireError("DATA shorter than its header")
        if p == "seed":
            sid, pn, off, length = _DATA[p].unpack_from(datagram, HEADER_SIZE)
        else:
            pn, sid, off, length = _DATA[p].unpack_from(datagram, HEADER_SIZE)
        extra = OW_TRAILER if p == "openweaver" else 0
        if rest - 20 != length + extra:
            raise StreamWireError(f"DATA length {length} (+{extra}) but {rest - 20} bytes follow")
        if max_data is not None and length > max_data:
            raise StreamWireError(f"DATA of {length} bytes exceeds the {max_data}-byte maximum payload")
        if off + length > U64:
            raise StreamWireError("DATA runs past the largest stream offset")
        end = DATA_HEADER_SIZE + length
        return Data(src, dst, sid, pn, off, bytes(datagram[DATA_HEADER_SIZE:end]), kind == PacketType.DATA_FIN,
                    bytes(datagram[end:]))
    if kind == PacketType.ACK:
        if rest < 10:
            raise StreamWireError("ACK shorter than its header")
        n, largest = _ACK[p].unpack_from(datagram, HEADER_SIZE)
        if rest - 10 != 8 * n:
            raise StreamWireError(f"ACK says {n} entries but carries {rest - 10} bytes")
        entries = struct.unpack_from(f"{_ENDIAN[p]}{n}Q", datagram, ACK_HEADER_SIZE)
        ack = Ack(src, dst, largest, entries)
        if sum(entries) > largest + 1:
            raise StreamWireError("ACK ranges run below packet number 0")
        return ack
    if kind in (PacketType.DIAL, PacketType.DIALCONF):
        payload = bytes(datagram[HEADER_SIZE:])
        if p == "seed" and payload:
            raise StreamWireError("seed DIAL/DIALCONF carry no payload")
        if kind == PacketType.DIAL:
            if p == "seed" and dst != 0:
                raise StreamWireError("seed DIAL must carry a zero destination id")
            return Dial(src, dst, payload)
        return DialConf(src, dst, payload)
    if kind in (PacketType.CONF, PacketType.RST):
        if rest:
            raise StreamWireError(f"{PacketType(kind).name} with {rest} trailing bytes")
        return Conf(src, dst) if kind == PacketType.CONF else Rst(src, dst)
    raise StreamWireError(f"unknown packet type {kind:#04x}")

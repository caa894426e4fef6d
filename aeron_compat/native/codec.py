"""Aeron UDP wire codec: frames (native/frames.py) to bytes and back, little-endian.

Theory: a datagram carries one or more frames, each starting with an 8-byte
header (length, version, flags, type) and aligned to 32 bytes; the last frame
may omit its alignment padding. `decode_datagram` walks the frames and returns
dataclasses; `encode_datagram` does the reverse. DATA frames with length 0 are
heartbeats; PAD frames carry only their 32-byte header on the wire while their
length field says how much of the term they fill. Unknown frame types come back
as `UnknownFrame` so callers can ignore them; anything malformed raises
`AeronWireError` and nothing else. Layouts follow what real Aeron drivers send
(36/44-byte SM, 40-byte ERR with error code); see specs/decisions/aeron.md (AERON-1, AERON-2).
"""

from __future__ import annotations

import struct

from .frames import (
    DATA_HEADER,
    DATA_HEADER_LENGTH,
    ERR_HEADER,
    HEADER,
    NAK_HEADER,
    RES_ADDRESS_LENGTHS,
    RES_ENTRY,
    RES_NAME_LENGTH,
    RSP_SETUP_HEADER,
    RTTM_HEADER,
    SETUP_HEADER,
    SM_HEADER,
    SM_LENGTHS,
    SM_RECEIVER_ID,
    VERSION,
    AeronWireError,
    DataFrame,
    ErrorFrame,
    Frame,
    FrameType,
    Heartbeat,
    Nak,
    PadFrame,
    ResEntry,
    Resolution,
    ResponseSetup,
    Rttm,
    Setup,
    StatusMessage,
    UnknownFrame,
    align,
)

# ----------------------------------------------------------------------------- encoding


def _encode_res_entry(entry: ResEntry) -> bytes:
    expected = RES_ADDRESS_LENGTHS.get(entry.res_type)
    if expected is None or len(entry.address) != expected:
        raise AeronWireError(f"RES entry type {entry.res_type} with a {len(entry.address)}-byte address")
    raw = (
        RES_ENTRY.pack(entry.res_type, entry.flags, entry.udp_port, entry.age_ms)
        + entry.address
        + RES_NAME_LENGTH.pack(len(entry.name))
        + entry.name
    )
    return raw + bytes(align(len(raw), 8) - len(raw))


def encode_frame(frame: Frame) -> bytes:
    """The wire bytes of one frame, without trailing alignment padding."""
    match frame:
        case DataFrame():
            return (
                DATA_HEADER.pack(
                    DATA_HEADER_LENGTH + len(frame.payload), VERSION, frame.flags, FrameType.DATA,
                    frame.term_offset, frame.session_id, frame.stream_id, frame.term_id, frame.reserved_value,
                )
                + frame.payload
            )
        case Heartbeat():
            return DATA_HEADER.pack(
                0, VERSION, frame.flags, FrameType.DATA,
                frame.term_offset, frame.session_id, frame.stream_id, frame.term_id, frame.reserved_value,
            )
        case PadFrame():
            if frame.length < DATA_HEADER_LENGTH:
                raise AeronWireError(f"PAD length {frame.length} is shorter than its header")
            return DATA_HEADER.pack(
                frame.length, VERSION, frame.flags, FrameType.PAD,
                frame.term_offset, frame.session_id, frame.stream_id, frame.term_id, frame.reserved_value,
            )
        case Nak():
            return NAK_HEADER.pack(
                NAK_HEADER.size, VERSION, frame.flags, FrameType.NAK,
                frame.session_id, frame.stream_id, frame.term_id, frame.term_offset, frame.length,
            )
        case StatusMessage():
            tail = b""
            if frame.receiver_id is not None:
                tail = SM_RECEIVER_ID.pack(frame.receiver_id)
                if frame.group_tag is not None:
                    tail += SM_RECEIVER_ID.pack(frame.group_tag)
            elif frame.group_tag is not None:
                raise AeronWireError("an SM with a group tag needs a receiver id")
            return (
                SM_HEADER.pack(
                    SM_HEADER.size + len(tail), VERSION, frame.flags, FrameType.SM,
                    frame.session_id, frame.stream_id, frame.consumption_term_id,
                    frame.consumption_term_offset, frame.receiver_window,
                )
                + tail
            )
        case ErrorFrame():
            return (
                ERR_HEADER.pack(
                    ERR_HEADER.size + len(frame.message), VERSION, frame.flags, FrameType.ERR,
                    frame.session_id, frame.stream_id, frame.receiver_id, frame.group_tag,
                    frame.error_code, len(frame.message),
                )
                + frame.message
            )
        case Setup():
            return SETUP_HEADER.pack(
                SETUP_HEADER.size, VERSION, frame.flags, FrameType.SETUP,
                frame.term_offset, frame.session_id, frame.stream_id, frame.initial_term_id,
                frame.active_term_id, frame.term_length, frame.mtu, frame.ttl,
            )
        case Rttm():
            return RTTM_HEADER.pack(
                RTTM_HEADER.size, VERSION, frame.flags, FrameType.RTTM,
                frame.session_id, frame.stream_id, frame.echo_timestamp, frame.reception_delta, frame.receiver_id,
            )
        case Resolution():
            body = b"".join(_encode_res_entry(e) for e in frame.entries)
            return HEADER.pack(HEADER.size + len(body), VERSION, frame.flags, FrameType.RES) + body
        case ResponseSetup():
            return RSP_SETUP_HEADER.pack(
                RSP_SETUP_HEADER.size, VERSION, frame.flags, FrameType.RSP_SETUP,
                frame.session_id, frame.stream_id, frame.response_session_id,
            )
        case UnknownFrame():
            return HEADER.pack(HEADER.size + len(frame.body), VERSION, frame.flags, frame.frame_type) + frame.body
    raise TypeError(f"not an Aeron frame: {frame!r}")


def encode_datagram(frames: list[Frame]) -> bytes:
    """Frames packed into one datagram, each but the last padded to 32-byte alignment."""
    out = bytearray()
    for frame in frames:
        out += bytes(align(len(out)) - len(out))
        out += encode_frame(frame)
    return bytes(out)


# ----------------------------------------------------------------------------- decoding


def _decode_res(body: memoryview, flags: int) -> Resolution:
    entries: list[ResEntry] = []
    pos = 0
    while pos < len(body):
        if len(body) - pos < RES_ENTRY.size:
            raise AeronWireError("truncated RES entry")
        res_type, res_flags, port, age = RES_ENTRY.unpack_from(body, pos)
        addr_len = RES_ADDRESS_LENGTHS.get(res_type)
        if addr_len is None:
            raise AeronWireError(f"unknown RES entry type {res_type}")
        fixed = RES_ENTRY.size + addr_len + RES_NAME_LENGTH.size
        if len(body) - pos < fixed:
            raise AeronWireError("truncated RES entry")
        (name_len,) = RES_NAME_LENGTH.unpack_from(body, pos + fixed - RES_NAME_LENGTH.size)
        if name_len < 0 or len(body) - pos < fixed + name_len:
            raise AeronWireError("RES entry name overruns the frame")
        address = bytes(body[pos + RES_ENTRY.size : pos + RES_ENTRY.size + addr_len])
        name = bytes(body[pos + fixed : pos + fixed + name_len])
        entries.append(ResEntry(res_type, res_flags, port, age, address, name))
        pos += align(fixed + name_len, 8)
    return Resolution(tuple(entries), flags)


def _need(frame_length: int, minimum: int, what: str) -> None:
    if frame_length < minimum:
        raise AeronWireError(f"{what} frame length {frame_length} is below its header length {minimum}")


def _decode_one(buf: memoryview, pos: int, frame_length: int, flags: int, ftype: int) -> Frame:
    """Decode the frame at `pos` whose header fields have been read and bounds-checked."""
    if ftype == FrameType.DATA:
        _, _, _, _, off, sess, strm, term, rv = DATA_HEADER.unpack_from(buf, pos)
        if frame_length == 0:
            return Heartbeat(off, sess, strm, term, flags, rv)
        _need(frame_length, DATA_HEADER_LENGTH, "DATA")
        return DataFrame(off, sess, strm, term, bytes(buf[pos + DATA_HEADER_LENGTH : pos + frame_length]), flags, rv)
    if ftype == FrameType.PAD:
        _need(frame_length, DATA_HEADER_LENGTH, "PAD")
        _, _, _, _, off, sess, strm, term, rv = DATA_HEADER.unpack_from(buf, pos)
        return PadFrame(off, sess, strm, term, frame_length, flags, rv)
    if ftype == FrameType.NAK:
        _need(frame_length, NAK_HEADER.size, "NAK")
        *_, sess, strm, term, off, length = NAK_HEADER.unpack_from(buf, pos)
        return Nak(sess, strm, term, off, length, flags)
    if ftype == FrameType.SM:
        if frame_length not in SM_LENGTHS:
            raise AeronWireError(f"SM frame length {frame_length} is not one of {SM_LENGTHS}")
        *_, sess, strm, term, off, window = SM_HEADER.unpack_from(buf, pos)
        receiver_id = group_tag = None
        if frame_length >= SM_LENGTHS[1]:
            (receiver_id,) = SM_RECEIVER_ID.unpack_from(buf, pos + SM_HEADER.size)
        if frame_length == SM_LENGTHS[2]:
            (group_tag,) = SM_RECEIVER_ID.unpack_from(buf, pos + SM_HEADER.size + 8)
        return StatusMessage(sess, strm, term, off, window, receiver_id, group_tag, flags)
    if ftype == FrameType.ERR:
        _need(frame_length, ERR_HEADER.size, "ERR")
        *_, sess, strm, rid, tag, code, text_len = ERR_HEADER.unpack_from(buf, pos)
        if text_len < 0 or ERR_HEADER.size + text_len > frame_length:
            raise AeronWireError(f"ERR text length {text_len} overruns frame length {frame_length}")
        text = bytes(buf[pos + ERR_HEADER.size : pos + ERR_HEADER.size + text_len])
        return ErrorFrame(sess, strm, rid, tag, code, text, flags)
    if ftype == FrameType.SETUP:
        _need(frame_length, SETUP_HEADER.size, "SETUP")
        *_, off, sess, strm, initial, active, term_length, mtu, ttl = SETUP_HEADER.unpack_from(buf, pos)
        return Setup(off, sess, strm, initial, active, term_length, mtu, ttl, flags)
    if ftype == FrameType.RTTM:
        _need(frame_length, RTTM_HEADER.size, "RTTM")
        *_, sess, strm, echo, delta, rid = RTTM_HEADER.unpack_from(buf, pos)
        return Rttm(sess, strm, echo, delta, rid, flags)
    if ftype == FrameType.RES:
        _need(frame_length, HEADER.size, "RES")
        return _decode_res(buf[pos + HEADER.size : pos + frame_length], flags)
    if ftype == FrameType.RSP_SETUP:
        _need(frame_length, RSP_SETUP_HEADER.size, "RSP_SETUP")
        *_, sess, strm, rsp = RSP_SETUP_HEADER.unpack_from(buf, pos)
        return ResponseSetup(sess, strm, rsp, flags)
    _need(frame_length, HEADER.size, "unknown")
    return UnknownFrame(ftype, flags, bytes(buf[pos + HEADER.size : pos + frame_length]))


def scan_datagram(data: bytes | bytearray | memoryview) -> list[tuple[int, int, int, int]]:
    """Validate frame boundaries; return (offset, frame_length, flags, type) per frame."""
    buf = memoryview(data)
    end = len(buf)
    out: list[tuple[int, int, int, int]] = []
    pos = 0
    while pos < end:
        if end - pos < HEADER.size:
            raise AeronWireError(f"{end - pos} trailing bytes are too short for a frame header")
        frame_length, version, flags, ftype = HEADER.unpack_from(buf, pos)
        if version != VERSION:
            raise AeronWireError(f"unsupported frame version {version}")
        if frame_length < 0:
            raise AeronWireError(f"negative frame length {frame_length}")
        on_wire = DATA_HEADER_LENGTH if ftype == FrameType.PAD or (ftype == 1 and frame_length == 0) else frame_length
        if on_wire < HEADER.size:
            raise AeronWireError(f"frame length {frame_length} is shorter than the frame header")
        if on_wire > end - pos:
            raise AeronWireError(f"frame length {on_wire} overruns the datagram ({end - pos} bytes left)")
        out.append((pos, frame_length, flags, ftype))
        pos += (on_wire + 31) & ~31
    return out


def decode_datagram(data: bytes | bytearray | memoryview) -> list[Frame]:
    """Every frame of a datagram; raises AeronWireError (only) if any of it is malformed."""
    buf = memoryview(data)
    try:
        return [_decode_one(buf, pos, length, flags, ftype) for pos, length, flags, ftype in scan_datagram(buf)]
    except struct.error as exc:  # a fixed header longer than the bytes left
        raise AeronWireError(f"truncated frame: {exc}") from None


def decode_frame(data: bytes | bytearray | memoryview) -> Frame:
    """The single frame of `data`; raises AeronWireError if there is not exactly one."""
    frames = decode_datagram(data)
    if len(frames) != 1:
        raise AeronWireError(f"expected one frame, found {len(frames)}")
    return frames[0]

"""The Aqueduct wire format: bytes to frames and back, pure functions, no I/O.

Layout: varint.py (var len ints and byte arrays), headers.py (header data),
ranges.py (pos-neg range data), channel_id.py (IDs and minting), frames.py
(one dataclass per frame and the per-frame codec), reader.py (whole-buffer
and incremental decoding), vectors.py (the JSON vector schema). Every
malformed input raises ProtocolError and nothing else.
"""

from .channel_id import ENTRYPOINT, ChannelId, ChannelIdMinter, Side
from .errors import CloseCode, ProtocolError
from .frames import (
    PROTOCOL_VERSION,
    AckNackUnreliable,
    AckReliable,
    ChannelControl,
    ClosedChannelLost,
    CloseReceiver,
    ConnectionControl,
    FinishSender,
    Frame,
    FrameType,
    Message,
    SentUnreliable,
    Version,
    encode_frame,
    encode_frames,
    encode_message,
)
from .headers import Headers, encode_headers
from .ranges import ranges_to_runs, runs_to_ranges, validate_ranges
from .reader import DEFAULT_MAX_FRAME_SIZE, FrameReader, decode_frames
from .varint import MAX_VARINT, decode_varint, encode_varint

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "ENTRYPOINT",
    "MAX_VARINT",
    "PROTOCOL_VERSION",
    "AckNackUnreliable",
    "AckReliable",
    "ChannelControl",
    "ChannelId",
    "ChannelIdMinter",
    "CloseCode",
    "CloseReceiver",
    "ClosedChannelLost",
    "ConnectionControl",
    "FinishSender",
    "Frame",
    "FrameReader",
    "FrameType",
    "Headers",
    "Message",
    "ProtocolError",
    "SentUnreliable",
    "Side",
    "Version",
    "decode_frames",
    "decode_varint",
    "encode_frame",
    "encode_frames",
    "encode_headers",
    "encode_message",
    "encode_varint",
    "ranges_to_runs",
    "runs_to_ranges",
    "validate_ranges",
]

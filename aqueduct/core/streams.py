"""QUIC streams as the engine sees them: IDs, roles, per-stream readers.

IDs follow QUIC numbering (bit 0: initiator, 1 = server; bit 1: uni); the
engine picks the IDs of streams it opens and a stream opens with its first
SendStreamData. Each stream with a direction towards us has a record that
lives until that direction ended (FIN or reset) and ours did too; it holds
an incremental FrameReader and the stream's role, which fixes the frames
allowed on it (a control stream whose half is gone keeps its role, and
its frames are checked, then ignored):

  role          opened by  frames from the peer
  CONNECTION    client     Version, ConnectionControl, then nothing, never ends
  NEW_BIDI      peer       [Version] ChannelControl -> CONTROL (or CONNECTION)
  NEW_UNI       peer       [Version] Message -> MESSAGES | ClosedChannelLost -> LOST_NOTICE
  MESSAGES      peer       Message*
  LOST_NOTICE   peer       nothing more, then FIN
  TO_SENDER     either     AckReliable, AckNackUnreliable, CloseReceiver (last)
  TO_RECEIVER   either     SentUnreliable, FinishSender (last)

A reliable Message for a full receiver queue stalls its stream: that frame
and everything after it wait (uncredited, so the peer's window closes) until
the application takes from the queue or the receiver ends.

A Version frame may open any direction from the peer (a client sends it
until it has the server's headers) and is mandatory on CONNECTION only.

"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import Enum

from ..wire.channel_id import Side
from ..wire.frames import Frame, Version, encode_frame
from ..wire.reader import FrameReader

VERSION_BYTES = encode_frame(Version())
"""The encoded Version frame a client puts first until it has the server's headers."""


class Role(Enum):
    """What a stream carries (see the table above)."""

    CONNECTION = "connection"
    NEW_BIDI = "new_bidi"
    NEW_UNI = "new_uni"
    MESSAGES = "messages"
    LOST_NOTICE = "lost_notice"
    TO_SENDER = "to_sender"
    TO_RECEIVER = "to_receiver"


@dataclass(slots=True)
class StreamRec:
    """One stream with a direction towards us."""

    stream_id: int
    role: Role
    reader: FrameReader
    half: int | None = None
    """Handle of the sender/receiver whose control stream this is."""
    frames_seen: int = 0
    in_done: bool = False
    out_done: bool = True
    final_seen: bool = False
    """FinishSender / CloseReceiver / ClosedChannelLost already read."""
    out_started: bool = False
    """We have written on our direction (for the client's Version prefix)."""
    pending_reset: int | None = None
    """A reset of our direction waiting until the peer has shown it read our ChannelControl."""
    pre: int = 0
    outstanding: int = 0
    """Credit of this stream's messages still queued for the application."""
    busy: bool = False
    """Its frames are being processed (partial-frame credit waits until that is done)."""
    """Bytes already credited that belong to the next unprocessed frame (partial, or first stalled)."""
    stalled: deque[tuple[Frame, int]] | None = None
    """Frames (with their wire sizes) not processed yet because a receiver queue was full (backpressure), in order."""
    stalled_bytes: int = 0
    stalled_fin: bool = False


def is_uni(stream_id: int) -> bool:
    """Whether a QUIC stream ID is unidirectional."""
    return bool(stream_id & 2)


_OPENER = (Side.CLIENT, Side.SERVER)


def opened_by(stream_id: int) -> Side:
    """The side that opened a stream."""
    return _OPENER[stream_id & 1]


class StreamIds:
    """Allocates QUIC stream IDs for the streams one side opens."""

    def __init__(self, side: Side) -> None:
        self._next_bidi = side.value
        self._next_uni = 2 | side.value

    def bidi(self) -> int:
        """The next bidirectional stream ID."""
        sid = self._next_bidi
        self._next_bidi += 4
        return sid

    def uni(self) -> int:
        """The next unidirectional stream ID."""
        sid = self._next_uni
        self._next_uni += 4
        return sid


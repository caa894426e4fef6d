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

The StreamTable owns the map of records: it opens our streams (a client
puts a Version frame first until the server's headers came), writes and
resets our direction of control streams, binds a record to its half, and
drops a record once both directions ended. A record's fields are written
by two parts, each field by one: the reading side (role, reader,
frames_seen, in_done, final_seen, pre, outstanding, busy, stalled*) by
incoming.py as frames arrive, the writing side (out_started, out_done,
pending_reset) and the half binding here. A dropped record holds no bytes:
a FIN needs a whole last frame, and a reset releases what was held.

Spec: "Streams" in the frame placement rules; the channel control stream
("When a sender or receiver is created locally ... the local side must
create a bidirectional stream ... and send on it a ChannelControl frame").
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import Enum

from ..errors import ResetCode
from ..wire.channel_id import Side
from ..wire.frames import (
    AckNackUnreliable,
    AckReliable,
    ChannelControl,
    ClosedChannelLost,
    CloseReceiver,
    ConnectionControl,
    FinishSender,
    Frame,
    Message,
    SentUnreliable,
    Version,
    encode_frame,
)
from ..wire.reader import FrameReader
from .context import Context
from .transport import ResetStream, SendStreamData

VERSION_BYTES = encode_frame(Version())
"""The encoded Version frame a client puts first until it has the server's headers."""


class Role(Enum):
    """What a stream carries (see the table above)."""

    __hash__ = object.__hash__  # (members are singletons; Enum's own hash is a Python call, per table lookup)

    CONNECTION = "connection"
    NEW_BIDI = "new_bidi"
    NEW_UNI = "new_uni"
    MESSAGES = "messages"
    LOST_NOTICE = "lost_notice"
    TO_SENDER = "to_sender"
    TO_RECEIVER = "to_receiver"


ROLE_FRAMES: dict[Role, tuple[type, ...]] = {
    Role.CONNECTION: (ConnectionControl,),
    Role.NEW_BIDI: (ChannelControl,),
    Role.NEW_UNI: (Message, ClosedChannelLost),
    Role.MESSAGES: (Message,),
    Role.LOST_NOTICE: (),
    Role.TO_SENDER: (AckReliable, AckNackUnreliable, CloseReceiver),
    Role.TO_RECEIVER: (SentUnreliable, FinishSender),
}
"""The frames each role allows from the peer (Version aside: it may open any direction)."""


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
    pending_reset: ResetCode | None = None
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



class StreamTable:
    """The stream records of one connection, and our writes that open, end or reset streams."""

    __slots__ = ("_ctx", "_headers", "_ids", "_max", "_out", "_records", "get", "need_version", "owed")

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._out = ctx.out
        self._max = ctx.config.max_frame_size
        self._headers = ctx.config.header_limits
        self._ids = StreamIds(ctx.side)
        self._records: dict[int, StreamRec] = {
            0: StreamRec(0, Role.CONNECTION, FrameReader(self._max, self._headers), out_done=False)}
        self.get = self._records.get
        """The record of a stream, or None."""
        self.need_version = ctx.side is Side.CLIENT
        """A client prefixes every new stream and datagram with Version until the server's headers arrive."""
        self.owed: dict[int, bytes] = {}
        """Control streams the peer opened whose first frame we owe (`owe_first`), with that frame."""

    def __len__(self) -> int:
        return len(self._records)

    def open_connection_stream(self, data: bytes) -> None:
        """Client: open stream 0, the connection control stream, with `data` (Version + ConnectionControl)."""
        self._ids.bidi()
        self._records[0].out_started = True
        self._out.command(SendStreamData(0, data))

    def headers_arrived(self) -> None:
        """The server's headers came: new streams and datagrams go without the Version prefix."""
        self.need_version = False

    def accept(self, stream_id: int) -> StreamRec:
        """A record for a stream the peer opened (the caller checked that it did)."""
        uni = is_uni(stream_id)
        rec = StreamRec(stream_id, Role.NEW_UNI if uni else Role.NEW_BIDI, FrameReader(self._max, self._headers))
        rec.out_done = uni
        self._records[stream_id] = rec
        return rec

    def open_uni(self, data: bytes, fin: bool = False) -> int:
        """Open a uni stream with `data` (Version first if due); return its ID."""
        sid = self._ids.uni()
        self._out.command(SendStreamData(sid, VERSION_BYTES + data if self.need_version else data, fin))
        return sid

    def open_bidi(self, data: bytes, role: Role, half: int) -> int:
        """Open a bidi stream (a control stream of `half`, reading `role`) with `data`; return its ID."""
        sid = self._ids.bidi()
        self._out.command(SendStreamData(sid, VERSION_BYTES + data if self.need_version else data))
        self._records[sid] = StreamRec(sid, role, FrameReader(self._max, self._headers), half=half, out_done=False,
                                       out_started=True)
        return sid

    def open_reply(self, rec: StreamRec) -> None:
        """A peer-opened bidi stream turned out to be a control stream: our direction exists now."""
        rec.out_done = False

    def bind(self, rec: StreamRec, half: int) -> None:
        """The record is the control stream of `half`."""
        rec.half = half

    def unbind(self, stream_id: int) -> None:
        """The half of this control stream is gone: its frames are still checked, then ignored."""
        rec = self._records.get(stream_id)
        if rec is not None:
            rec.half = None

    def owe_first(self, stream_id: int, frame: bytes) -> None:
        """The peer opened this control stream and waits for a first frame from us (its deferred reset does):
        `frame` goes out when the engine's commands are next drained (`flush_owed`), unless another write or a
        reset of the stream goes first, which tells the peer the same (a CloseReceiver or FinishSender of the
        same input, so a fresh channel's close carries no empty frame before it)."""
        self.owed[stream_id] = frame

    def flush_owed(self) -> None:
        """Write the first frames still owed (the engine's commands are being drained)."""
        owed, self.owed = self.owed, {}
        for stream_id, frame in owed.items():
            rec = self._records.get(stream_id)
            if rec is not None and not rec.out_done:
                self.write(stream_id, frame)

    def write(self, stream_id: int, data: bytes, fin: bool = False) -> None:
        """Write on our direction of a control stream (the first write of a client may need Version)."""
        if self.owed:
            self.owed.pop(stream_id, None)
        rec = self._records.get(stream_id)
        if rec is not None:
            if not rec.out_started:
                rec.out_started = True
                if self.need_version:
                    data = VERSION_BYTES + data
            if fin:
                rec.out_done = True
        self._out.command(SendStreamData(stream_id, data, fin))
        if fin and rec is not None:
            self.maybe_drop(rec)

    def reset(self, stream_id: int, code: ResetCode) -> None:
        """Reset our direction of a control stream.

        A QUIC reset may discard bytes the peer has not read, so on a stream we opened
        the reset waits until the peer has sent a frame (or ended its direction): only
        then do we know it read our ChannelControl and can tell which channel is reset.
        """
        if self.owed:
            self.owed.pop(stream_id, None)
        rec = self._records.get(stream_id)
        if rec is not None and opened_by(stream_id) is self._ctx.side and rec.frames_seen == 0 and not rec.in_done:
            rec.pending_reset = code
            return
        self._out.command(ResetStream(stream_id, code))
        if rec is not None:
            rec.out_done = True
            rec.pending_reset = None
            self.maybe_drop(rec)

    def flush_pending_reset(self, rec: StreamRec) -> None:
        """The peer showed it read our ChannelControl: a reset that waited for that goes out."""
        if rec.pending_reset is not None:
            code, rec.pending_reset = rec.pending_reset, None
            self._out.command(ResetStream(rec.stream_id, code))
            rec.out_done = True
            self.maybe_drop(rec)

    def maybe_drop(self, rec: StreamRec) -> None:
        """Forget the record once both directions ended (the connection control stream stays)."""
        if rec.in_done and rec.out_done and rec.role is not Role.CONNECTION:
            self._records.pop(rec.stream_id, None)

    def drop(self, rec: StreamRec) -> None:
        """Forget a record whose directions both ended."""
        del self._records[rec.stream_id]

    def clear(self) -> None:
        """Forget everything (connection over)."""
        self._records.clear()
        self.owed.clear()

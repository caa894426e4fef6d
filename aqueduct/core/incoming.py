"""Incoming bytes: stream roles, frame placement rules, and routing.

Spec: "Frame placement" (which frames each stream may carry, Version
first), the stream reset codes, and "Backpressure" for a stream's frames.

Each stream direction towards us has a record (streams.py) whose role says
which frames may come next; a frame outside its role is a protocol error
(Message on a bidi stream, ChannelControl anywhere but first on a
peer-opened bidi stream, a frame after FinishSender / CloseReceiver /
ClosedChannelLost, acks towards a receiver, ...). Version may only open a
direction or datagram. Reset codes other than 1 and 2 are protocol errors.
Frames go to their owners: Messages to intake.py, control frames to the
half's part (sending.py, receiving.py), ConnectionControl to startup.py,
ClosedChannelLost to loss.py.

Backpressure and credit (flow.py): a reliable Message for a full receiver
queue stalls the rest of its stream until the queue has room
(`resume_stalled`); the bytes a feed completes are credited at once but
those of Messages queued for the application. Datagrams need none.

Short paths: a chunk inside a large frame is only buffered; a new uni
stream arriving whole as one plain Message (an unordered message) is
processed without a stream record; Message frames on a message stream skip
the role table; on a message stream, a chunk's run of plain in-order
Messages is parsed in one loop and handed to Intake as one batch.
Every Message, of a stream or a datagram, reaches Intake through its one
entry, `Intake.receive`.

Incoming writes the reading side of stream records (streams.py says which
fields) and nothing of the halves.
"""

from __future__ import annotations

from collections import deque

from ..errors import ResetCode
from ..wire.channel_id import ChannelId
from ..wire.errors import CloseCode, ProtocolError
from ..wire.frames import (
    ChannelControl,
    ClosedChannelLost,
    CloseReceiver,
    ConnectionControl,
    FinishSender,
    Frame,
    Message,
    Version,
)
from ..wire.reader import FrameReader, decode_frames, read_plain_run, read_plain_whole
from .context import Context
from .flow import Flow
from .halves import Halves
from .intake import Intake, QueueFull
from .loss import Loss
from .receiving import Receivers
from .sending import Senders
from .startup import Startup
from .streams import ROLE_FRAMES, Role, StreamRec, StreamTable, is_uni, opened_by
from .transport import (
    DatagramReceived,
    StopSendingReceived,
    StreamDataReceived,
    StreamReset,
    TransportEvent,
)

_MESSAGES = Role.MESSAGES
_NEW_UNI = Role.NEW_UNI
_VALID_RESETS = frozenset(int(c) for c in ResetCode)
_SMALL_HELD = 1024
"""Held bytes up to which a chunk of a message stream is read by `_plain_runs` (a large frame completing is one
message: the general path takes it for less)."""


class Incoming:
    """Transport events in, frames routed."""

    def __init__(
        self,
        ctx: Context,
        streams: StreamTable,
        halves: Halves,
        flow: Flow,
        parts: tuple[Startup, Intake, Senders, Receivers, Loss],
    ) -> None:
        self._ctx = ctx
        self._side = ctx.side
        self._max = ctx.config.max_frame_size
        self._headers = ctx.config.header_limits
        self._buffered_max = ctx.config.max_buffered_bytes
        self._streams = streams
        self._halves = halves
        self._senders = halves.senders
        self._receivers = halves.receivers
        self._flow = flow
        self._startup, self._intake, self._tx, self._rx, self._loss = parts
        self._credit = flow.credit
        self._credit_partial = flow.credit_partial

    def _limit(self, reason: str) -> None:
        raise ProtocolError(reason, CloseCode.LIMIT_EXCEEDED)

    def dispatch(self, event: TransportEvent) -> None:
        """One admitted transport event."""
        if isinstance(event, StreamDataReceived):
            self.on_stream_data(event)
        elif isinstance(event, StreamReset):
            self._on_stream_reset(event)
        elif isinstance(event, DatagramReceived):
            self.on_datagram(event.data)
        elif isinstance(event, StopSendingReceived):
            pass  # the transport resets the stream itself; CloseReceiver settles the channel's messages

    def _incoming_rec(self, sid: int) -> StreamRec:
        rec = self._streams.get(sid)
        if rec is not None:
            return rec
        if opened_by(sid) is self._side:
            raise ProtocolError(f"data on stream {sid}, which we never opened for the peer to write")
        return self._streams.accept(sid)

    def on_stream_data(self, ev: StreamDataReceived) -> None:
        sid = ev.stream_id
        rec = self._streams.get(sid)
        if rec is None:
            if ev.end_stream and is_uni(sid) and opened_by(sid) is not self._side and self._whole_message(ev):
                return
            rec = self._incoming_rec(sid)
        if rec.in_done:
            return
        before = rec.reader.buffered
        self._feed(rec, ev)
        self._flow.track_partial(rec, before, len(ev.data))

    def _feed(self, rec: StreamRec, ev: StreamDataReceived) -> None:
        reader = rec.reader
        data = ev.data
        if not ev.end_stream:
            if reader.absorb(data):  # the middle of a large frame: no frame to run
                if self._flow.hold(len(data)):
                    self._limit(f"more than {self._buffered_max} bytes of partial frames buffered")
                if rec.stalled is None:
                    if rec.outstanding <= 0:
                        self._credit_partial(rec)
                    if rec.pending_reset is not None and rec.frames_seen:
                        self._streams.flush_pending_reset(rec)
                return
            if rec.role is _MESSAGES and reader.buffered <= _SMALL_HELD and rec.stalled is None:
                if rec.pending_reset is None:
                    data = self._plain_runs(rec, data)
                    if self._ctx.closed:
                        return
        before = reader.buffered
        frames, sizes = reader.feed_sized(data)
        after = reader.buffered
        consumed = before + len(data) - after
        held = after - before
        if rec.stalled is not None:
            rec.stalled.extend(zip(frames, sizes, strict=True))
            rec.stalled_bytes += consumed
            rec.stalled_fin = rec.stalled_fin or ev.end_stream
            held += consumed
        if self._flow.hold(held):
            self._limit(f"more than {self._buffered_max} bytes of partial frames buffered")
        if rec.stalled is None:
            if frames or ev.end_stream:
                self._run_frames(rec, frames, sizes, consumed, ev.end_stream)
            else:  # a piece of a frame: what _run_frames would do with no frame
                if rec.outstanding <= 0:
                    self._credit_partial(rec)
                if rec.frames_seen and rec.pending_reset is not None:
                    self._streams.flush_pending_reset(rec)

    def _plain_runs(self, rec: StreamRec, data: bytes) -> bytes:
        """Hand the run of plain in-order Messages at the front of a message stream's held bytes and `data` to
        Intake as one batch, as `_run_frames` would one by one; return the bytes left for the general path (the
        reader is then empty). One run per chunk: an ordered channel's stream carries one channel."""
        reader = rec.reader
        self._flow.release(reader.buffered)
        buf = reader.take_buffer(data)
        payloads: list[bytes] = []
        sizes: list[int] = []
        channel, first, stop = read_plain_run(buf, 0, self._max, payloads, sizes)
        if not payloads:
            return buf
        pre = rec.pre
        if pre:  # (credited while it was partial: not again)
            sizes[0] -= pre
            rec.pre = 0
        rec.busy = True
        try:
            done, held = self._intake.receive(channel, first, payloads, sizes, rec.stream_id)
        except QueueFull:  # (nothing changed: the general path stalls the stream)
            rec.pre = pre
            return buf
        finally:
            rec.busy = False
        rec.frames_seen += done
        reader.frames_read += done
        rec.outstanding += held
        consumed = sum(sizes[:done]) if done < len(sizes) else stop - pre
        if consumed > held:
            self._credit(rec.stream_id, consumed - held)
        stop = consumed + pre if done else 0
        return buf[stop:] if stop else buf

    def _whole_message(self, ev: StreamDataReceived) -> bool:
        """A new uni stream arrived whole, one plain Message (an unordered message): process it without a
        stream record, as the general path would. False (nothing done) for anything else or a full queue."""
        data = ev.data
        if type(data) is not bytes:
            return False
        plain = read_plain_whole(data, self._max)
        if plain is None:
            return False
        channel, number, payload = plain
        try:
            held = self._intake.receive(channel, number, (payload,), (len(data),), ev.stream_id)[1]
        except QueueFull:
            return False  # raised before any change: the general path stalls the stream
        if not held:
            self._credit(ev.stream_id, len(data))
        return True

    def _run_frames(
        self, rec: StreamRec, frames: list[Frame], sizes: list[int], nbytes: int, fin: bool
    ) -> None:
        """Process a stream's frames in order (stalling at a full receiver queue), then credit and FIN.

        `rec.pre` bytes of the first frame were credited while it was partial; they are not credited again.
        `sizes` are the frames' wire sizes.
        """
        pre, rec.pre = rec.pre, 0
        if not frames:
            rec.pre = pre
            pre = 0
        other = nbytes - pre
        rec.busy = True
        for i, frame in enumerate(frames):
            p = pre if i == 0 else 0
            try:
                if type(frame) is Message and (rec.role is _MESSAGES or rec.role is _NEW_UNI):  # the hot path
                    rec.role = _MESSAGES
                    rec.frames_seen += 1
                    deferred = self._intake.receive(frame.channel, frame.number, (frame.payload,), (sizes[i] - p,),
                                                    rec.stream_id, True, frame.attachments)[1]
                else:
                    deferred = self._stream_frame(rec, frame, sizes[i] - p)
            except QueueFull as full:
                rec.busy = False
                rec.frames_seen -= 1
                rest = list(zip(frames[i:], sizes[i:], strict=True))
                held = sum(sizes[i:])
                other -= held - p
                rec.pre = p
                rec.stalled = deque(rest)
                rec.stalled_bytes = held
                rec.stalled_fin = fin
                self._flow.hold(held)  # (the reader gave these up as frames: held again, no more than arrived)
                self._flow.stall(full.receiver, rec.stream_id)
                self._credit(rec.stream_id, other)
                return
            other -= deferred
            rec.outstanding += deferred
            if self._ctx.closed:
                return
        rec.busy = False
        if other > 0:
            self._credit(rec.stream_id, other)
        if rec.outstanding <= 0:
            self._credit_partial(rec)
        if rec.frames_seen and rec.pending_reset is not None:
            self._streams.flush_pending_reset(rec)
        if fin:
            if rec.role is _MESSAGES and rec.out_done and not rec.reader.buffered and rec.pending_reset is None:
                rec.in_done = True  # a message stream ended cleanly: all _on_stream_fin would do
                self._streams.drop(rec)
            else:
                self._on_stream_fin(rec)

    def resume_stalled(self) -> None:
        """Streams stalled on receivers that have room again (or ended) run on."""
        flow = self._flow
        while flow.resume and not self._ctx.closed:
            handle = flow.resume.pop()
            for sid in sorted(flow.stalls.pop(handle, ())):
                rec = self._streams.get(sid)
                if rec is not None and rec.stalled is not None and not self._ctx.closed:
                    self._run_stalled(rec)

    def _run_stalled(self, rec: StreamRec) -> None:
        """Process a stalled stream's frames from the front until done or stalled again."""
        assert rec.stalled is not None
        credit = 0
        rec.busy = True
        while rec.stalled:
            frame, size = rec.stalled[0]
            p = rec.pre
            try:
                deferred = self._stream_frame(rec, frame, size - p)
            except QueueFull as full:
                rec.busy = False
                rec.frames_seen -= 1
                self._flow.stall(full.receiver, rec.stream_id)
                self._credit(rec.stream_id, credit)
                return
            rec.pre = 0
            rec.outstanding += deferred
            rec.stalled.popleft()
            rec.stalled_bytes -= size
            self._flow.release(size)
            credit += size - p - deferred
            if self._ctx.closed:
                return
        rec.busy = False
        fin = rec.stalled_fin
        rec.stalled, rec.stalled_fin = None, False
        self._run_frames(rec, [], [], credit, fin)

    def _stream_frame(self, rec: StreamRec, frame: Frame, size: int) -> int:
        """Process one frame of a stream; return the bytes whose credit is deferred (of `size`, its wire size
        less the bytes credited while it was partial)."""
        first = rec.frames_seen == 0
        rec.frames_seen += 1
        if isinstance(frame, Version):
            if not first:
                raise ProtocolError(f"Version frame not first on stream {rec.stream_id}")
            self._startup.check_version(frame)
            return 0
        if rec.role is Role.CONNECTION and self._startup.peer_headers is None and rec.frames_seen != 2:
            raise ProtocolError("the connection control stream must start with Version then ConnectionControl")
        if rec.final_seen:
            raise ProtocolError(f"frame {type(frame).__name__} after the final frame on stream {rec.stream_id}")
        if not isinstance(frame, ROLE_FRAMES[rec.role]):
            raise ProtocolError(f"{type(frame).__name__} not allowed on stream {rec.stream_id} ({rec.role.value})")
        if isinstance(frame, Message):
            if rec.role is Role.NEW_UNI:
                rec.role = Role.MESSAGES
            return self._intake.receive(frame.channel, frame.number, (frame.payload,), (size,), rec.stream_id, True,
                                        frame.attachments)[1]
        if isinstance(frame, ConnectionControl):
            self._startup.on_connection_control(frame.headers)
        elif isinstance(frame, ChannelControl):
            self._on_channel_control(rec, ChannelId(frame.channel))
        elif isinstance(frame, ClosedChannelLost):
            rec.role = Role.LOST_NOTICE
            rec.final_seen = True
            self._loss.on_closed_channel_lost(ChannelId(frame.channel))
        elif isinstance(frame, FinishSender | CloseReceiver):
            rec.final_seen = True
            self._control_frame(rec, frame)
        else:
            self._control_frame(rec, frame)
        return 0

    def _control_frame(self, rec: StreamRec, frame: Frame) -> None:
        """A frame on a channel control stream: route it to its half, if the half still exists."""
        if rec.half is None:
            return
        if rec.role is Role.TO_SENDER:
            s = self._senders.get(rec.half)
            if s is not None:
                self._tx.on_frame(s, frame)
        else:
            r = self._receivers.get(rec.half)
            if r is not None:
                self._rx.on_frame(r, frame)

    def _on_stream_fin(self, rec: StreamRec) -> None:
        rec.reader.finish()
        if rec.role is Role.CONNECTION:
            raise ProtocolError("the connection control stream was finished")
        if rec.role in (Role.TO_SENDER, Role.TO_RECEIVER) and not rec.final_seen:
            raise ProtocolError(f"control stream {rec.stream_id} finished without its final frame")
        rec.in_done = True
        self._streams.flush_pending_reset(rec)
        self._end_unidentified(rec)
        self._streams.maybe_drop(rec)

    def _end_unidentified(self, rec: StreamRec) -> None:
        """A peer-opened bidi stream ended before its ChannelControl was read: end our side too."""
        if rec.role is Role.NEW_BIDI and not rec.out_done:
            self._streams.reset(rec.stream_id, ResetCode.LOST)

    def _on_stream_reset(self, ev: StreamReset) -> None:
        if ev.error_code not in _VALID_RESETS:
            raise ProtocolError(f"stream {ev.stream_id} reset with unknown code {ev.error_code}")
        rec = self._streams.get(ev.stream_id)
        if rec is None:
            if opened_by(ev.stream_id) is self._side and is_uni(ev.stream_id):
                raise ProtocolError(f"reset of stream {ev.stream_id}, which the peer cannot send on")
            return  # a stream reset before any byte arrived, or already done
        if rec.role is Role.CONNECTION:
            raise ProtocolError("the connection control stream was reset")
        if rec.in_done:
            return
        rec.in_done = True
        self._flow.forget_partial(ev.stream_id)
        dropped = rec.reader.buffered + rec.stalled_bytes
        self._flow.release(dropped)
        self._credit(rec.stream_id, dropped - rec.pre)
        rec.pre = 0
        rec.reader = FrameReader(self._max, self._headers)
        rec.stalled, rec.stalled_bytes, rec.stalled_fin = None, 0, False
        half = rec.half
        role = rec.role
        self._streams.flush_pending_reset(rec)
        self._end_unidentified(rec)
        self._streams.maybe_drop(rec)
        if half is None:
            return
        if role is Role.TO_SENDER:
            s = self._senders.get(half)
            if s is not None:
                self._tx.on_ctrl_reset(s, ev.error_code)
        elif role is Role.TO_RECEIVER:
            r = self._receivers.get(half)
            if r is not None:
                self._rx.on_ctrl_reset(r, ev.error_code)

    def on_datagram(self, data: bytes) -> None:
        if type(data) is bytes:  # the hot path: one plain Message
            plain = read_plain_whole(data, self._max)
            if plain is not None:
                self._intake.receive(plain[0], plain[1], (plain[2],), (0,), None, False)
                return
        frames = decode_frames(data, self._max, self._headers)
        for i, frame in enumerate(frames):
            if type(frame) is Message:
                self._intake.receive(frame.channel, frame.number, (frame.payload,), (0,), None, False,
                                     frame.attachments)
                if self._ctx.closed:
                    return
            elif isinstance(frame, Version):
                if i:
                    raise ProtocolError("Version frame not first in a datagram")
                self._startup.check_version(frame)
            else:
                raise ProtocolError(f"{type(frame).__name__} not allowed in a datagram")

    def _on_channel_control(self, rec: StreamRec, channel: ChannelId) -> None:
        """A peer-opened bidi stream became a channel control stream (or is refused with 'lost')."""
        if channel.minted_by is not self._side:
            raise ProtocolError(f"ChannelControl for channel {channel} minted by the side that sent it")
        self._streams.open_reply(rec)
        if channel.to is self._side:
            rec.role = Role.TO_RECEIVER
            r = self._halves.rx_of.get(channel)
            if r is not None and r.ctrl is None:
                self._streams.bind(rec, r.handle)
                self._rx.attached(r, rec.stream_id)
                return
        else:
            rec.role = Role.TO_SENDER
            s = self._halves.tx_of.get(channel)
            if s is not None and s.ctrl is None:
                self._streams.bind(rec, s.handle)
                self._tx.attached(s, rec.stream_id)
                return
        # unknown channel, or its half already has a control stream: a ghost, refuse it
        self._streams.reset(rec.stream_id, ResetCode.LOST)


"""Flow control as the engine sees it: stream credit, partial frames, and streams stalled on full queues.

Spec: "Backpressure" (a receiver's queue is bounded; a reliable Message
that finds it full waits in its stream, whose QUIC window then closes).

Credit: the bytes a stream's feed completes are returned (GrantCredit) at
once, except those of Message frames queued for the application, which
return when the message is taken or discarded (`credit_taken`). A frame
still arriving is credited once the application took everything of its
stream (`credit_partial`), so a frame larger than the window can complete.

Stalls: a stream whose next frame found its receiver's queue full is
recorded under that receiver (`stall`); whenever the receiver makes room
or ends, `room` marks it to resume, and incoming.py runs its streams on.
`partial_bytes` counts bytes held in readers and stalled streams (incoming.py
says how many come and go: `hold`, `release`), bounded by max_buffered_bytes;
`partial_since` says since when each stream has held part of a frame (bounded
in time by partial_frame_timeout).

This object owns the three tables and the count; incoming.py and receiving.py call it.
"""

from __future__ import annotations

from ..wire.errors import CloseCode, ProtocolError
from .context import Context
from .receiver import ReceiverRecord
from .streams import Role, StreamRec, StreamTable
from .timers import PARTIAL_FRAME

_NEW = (Role.NEW_UNI, Role.NEW_BIDI)


class Flow:
    """Credit returns, the partial-byte count and the stalled streams of one connection."""

    __slots__ = ("_ctx", "_max_held", "_out", "_receivers", "_streams", "_timeout", "partial_bytes", "partial_since",
                 "resume", "stalls")

    def __init__(self, ctx: Context, streams: StreamTable, receivers: dict[int, ReceiverRecord]) -> None:
        self._ctx = ctx
        self._out = ctx.out
        self._streams = streams
        self._receivers = receivers
        self._timeout = ctx.config.partial_frame_timeout
        self._max_held = ctx.config.max_buffered_bytes
        self.partial_bytes = 0
        """Bytes held in stream readers and stalled streams (read by others; changed by `hold` and `release`)."""
        self.stalls: dict[int, set[int]] = {}
        """Receiver handle -> streams stalled on its full queue."""
        self.resume: set[int] = set()
        """Receivers whose stalled streams may run on."""
        self.partial_since: dict[int, float] = {}
        """Stream -> when its current partial frame began (incoming.py's partial-frame deadline)."""

    def hold(self, nbytes: int) -> bool:
        """`nbytes` more bytes are held in a stream reader or a stalled stream (a chunk's net change: negative
        when frames completed); whether the count is now past max_buffered_bytes (the caller closes)."""
        held = self.partial_bytes + nbytes
        self.partial_bytes = held
        return held > self._max_held

    def release(self, nbytes: int) -> None:
        """`nbytes` held bytes left: their frames were run, or their stream was reset."""
        self.partial_bytes -= nbytes

    def credit(self, stream_id: int | None, nbytes: int) -> None:
        """Return `nbytes` of credit on a stream (none once the connection is over)."""
        if stream_id is not None and nbytes > 0 and not self._ctx.closed:
            self._out.grant_credit(stream_id, nbytes)

    def credit_partial(self, rec: StreamRec) -> None:
        """Once the application took everything of this stream, credit the bytes of a frame still
        arriving, so a frame larger than the window can complete (otherwise the queue holds the window)."""
        extra = rec.reader.buffered - rec.pre
        if extra > 0 and rec.outstanding <= 0 and rec.stalled is None and not rec.busy:
            self.credit(rec.stream_id, extra)
            rec.pre = rec.reader.buffered

    def credit_taken(self, stream_id: int | None, nbytes: int) -> None:
        """A queued message was taken or discarded: return its credit (and maybe the partial frame's)."""
        if stream_id is None:
            return
        self.credit(stream_id, nbytes)
        rec = self._streams.get(stream_id)
        if rec is not None:
            rec.outstanding -= nbytes
            self.credit_partial(rec)

    def stall(self, receiver: int, stream_id: int) -> None:
        """A stream waits for room in a receiver's queue."""
        self.stalls.setdefault(receiver, set()).add(stream_id)

    def room(self, receiver: int) -> None:
        """A receiver's queue may have room (or the receiver ended): its stalled streams may run on."""
        if receiver in self.stalls:
            self.resume.add(receiver)

    # ---- the partial-frame deadline (SECURITY.md) ----
    def track_partial(self, rec: StreamRec, before: int, nbytes: int) -> None:
        """After a stream's chunk (`before` bytes held, `nbytes` arrived): a stream holding part of a frame, or
        opened without one yet, must complete it within partial_frame_timeout of its first byte; bytes leaving
        the reader (a frame completed) restart the clock. The timer is armed once; `partial_due` re-arms it."""
        sid, since, held = rec.stream_id, self.partial_since, rec.reader.buffered
        if not rec.in_done and rec.stalled is None and (held or rec.role in _NEW):
            if sid not in since:
                since[sid] = self._ctx.now
                self._ctx.timers.set((PARTIAL_FRAME, sid), self._ctx.now + self._timeout)
            elif before + nbytes > held:
                since[sid] = self._ctx.now
        elif sid in since:
            self.forget_partial(sid)

    def forget_partial(self, sid: int) -> None:
        """The stream ended or was reset: no deadline."""
        if self.partial_since.pop(sid, None) is not None:
            self._ctx.timers.cancel((PARTIAL_FRAME, sid))

    def partial_due(self, sid: int) -> None:
        """The partial-frame timer of a stream ran out: close (LIMIT_EXCEEDED) unless a frame completed since.

        While a receiver the application holds has messages it has not taken, our own windows may be what keeps
        the frame from completing (backpressure is no attack): the clock stops; the stream's next bytes restart it."""
        since = self.partial_since.get(sid)
        rec = self._streams.get(sid)
        if since is None or rec is None or rec.in_done:
            self.partial_since.pop(sid, None)
            return
        deadline = since + self._timeout
        if deadline > self._ctx.now:
            self._ctx.timers.set((PARTIAL_FRAME, sid), deadline)
        elif any(r.queue and r.exposed and not r.app_dropped for r in self._receivers.values()):
            del self.partial_since[sid]
        else:
            raise ProtocolError(f"stream {sid}: no complete frame within partial_frame_timeout={self._timeout} s "
                                "of its first byte", CloseCode.LIMIT_EXCEEDED)

    def stalled_streams(self) -> int:
        """Streams waiting for room (for state_sizes)."""
        return sum(len(v) for v in self.stalls.values())

    def clear(self) -> None:
        """The connection is over."""
        self.partial_bytes = 0
        self.stalls.clear()
        self.resume.clear()
        self.partial_since.clear()

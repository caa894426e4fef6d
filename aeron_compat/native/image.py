"""Sans-I/O image: one publisher session rebuilt from DATA frames on the receiving side.

Theory: frames are copied into a `TermLog` at their (term id, term offset).
`rebuild_position` is the end of the contiguous run from the start,
`hwm_position` the highest position seen (data or heartbeat). A hole between
them is loss: after `nak_delay_ns` a NAK asks for it, repeated every
`nak_retry_ns` while it lasts. `poll` hands fragments up to the rebuild
position to a handler and advances the subscriber position, cleaning the
partition that the stream will reuse next. Status messages report the
subscriber position and the receive window (at most half a term) whenever the
subscriber has moved a quarter window, and every `sm_interval_ns` anyway.
An EOS heartbeat sets the end-of-stream position; once consumed the image
ends. No packet for `liveness_timeout_ns` also ends it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from aeron_compat.client.codes import Action
from aeron_compat.native.codec import encode_frame
from aeron_compat.native.frames import DATA_HEADER_LENGTH, Flags, FrameType, Nak, Rttm, StatusMessage, align
from aeron_compat.native.termlog import TermLog

Address = tuple[str, int]
HEADER_FIELDS = struct.Struct("<iBBHiiiiq")


@dataclass
class ImageConfig:
    """Receiver-side timers and window (times in nanoseconds)."""

    receiver_id: int = 0
    initial_window: int = 128 * 1024
    group_tag: int | None = None
    sm_interval_ns: int = 200_000_000
    nak_delay_ns: int = 100_000
    nak_retry_ns: int = 20_000_000
    liveness_timeout_ns: int = 10_000_000_000


class Header:
    """The header of the fragment being delivered (reused between fragments, as in Aeron)."""

    __slots__ = ("flags", "frame_length", "initial_term_id", "position", "reserved_value", "session_id",
                 "stream_id", "term_id", "term_length", "term_offset", "type")

    def __init__(self) -> None:
        self.frame_length = self.flags = self.type = self.term_offset = 0
        self.session_id = self.stream_id = self.term_id = self.reserved_value = 0
        self.initial_term_id = self.position = self.term_length = 0

    @property
    def aligned_length(self) -> int:
        """Frame length rounded up to 32."""
        return align(self.frame_length)

    @property
    def payload_length(self) -> int:
        """Bytes of payload in this fragment."""
        return self.frame_length - DATA_HEADER_LENGTH


FragmentHandler = Callable[[memoryview, Header], object]


class Image:
    """A rebuilt stream of one session; feed frames in, poll fragments out."""

    def __init__(self, session_id: int, stream_id: int, initial_term_id: int, active_term_id: int,
                 term_offset: int, term_length: int, mtu: int, source: Address, config: ImageConfig,
                 now: int) -> None:
        self.session_id = session_id
        self.stream_id = stream_id
        self.mtu = mtu
        self.source = source
        self.config = config
        self.log = TermLog(term_length, initial_term_id)
        self.join_position = self.log.position(active_term_id, term_offset)
        self.rebuild_position = self.hwm_position = self.subscriber_position = self.join_position
        self.window = min(term_length // 2, config.initial_window)
        self.eos_position: int | None = None
        self.end_of_stream = False
        self.closed = False
        self.last_packet_ns = now
        self.last_sm_ns: int | None = None
        self.last_sm_position = self.join_position
        self.outbox: list[tuple[bytes, Address]] = []
        self.last_rtt_ns: int | None = None
        self.naks_sent = 0
        self._gap: tuple[int, int] | None = None
        self._nak_due_ns = 0
        self._zeros = bytes(term_length)
        self._cleaned_at = self.join_position
        self._header = Header()
        self._header.session_id, self._header.stream_id = session_id, stream_id
        self._header.initial_term_id, self._header.term_length = initial_term_id, term_length

    # ------------------------------------------------------------------ input

    def insert(self, data: memoryview, offset: int, frame_length: int, ftype: int, flags: int, term_id: int,
               term_offset: int, now: int) -> None:
        """Store the DATA/PAD frame at `data[offset:]` (or note a heartbeat, length 0)."""
        self.last_packet_ns = now
        log = self.log
        position = log.position(term_id, term_offset)
        if ftype == FrameType.DATA and frame_length == 0:
            if position > self.hwm_position and position <= self.subscriber_position + log.term_length:
                self.hwm_position = position
            if flags & Flags.EOS and position >= self.rebuild_position:
                self.eos_position = position
            return
        end = position + align(frame_length)
        if position < self.rebuild_position or end > self.subscriber_position + log.term_length:
            return
        if log.term_offset(position) + frame_length > log.term_length:
            return
        buf = log.partition(position)
        wire = DATA_HEADER_LENGTH if ftype == FrameType.PAD else frame_length
        buf[term_offset : term_offset + wire] = data[offset : offset + wire]
        if end > self.hwm_position:
            self.hwm_position = end
        if position == self.rebuild_position:
            self.rebuild_position = log.scan_complete(position, self.hwm_position)

    def insert_block(self, data: memoryview, length: int, term_id: int, term_offset: int, now: int) -> bool:
        """Store `data[:length]`, a contiguous run of frames starting at (term_id, term_offset).

        Returns False (nothing stored) when the run is not new data in the window; the caller then
        falls back to frame-by-frame insertion.
        """
        log = self.log
        position = log.position(term_id, term_offset)
        end = position + align(length)
        if (position < self.rebuild_position or end > self.subscriber_position + log.term_length
                or term_offset + length > log.term_length):
            return False
        self.last_packet_ns = now
        log.partition(position)[term_offset : term_offset + length] = data[:length]
        if end > self.hwm_position:
            self.hwm_position = end
        if position == self.rebuild_position:
            self.rebuild_position = end if end == self.hwm_position else log.scan_complete(end, self.hwm_position)
        return True

    def on_setup_again(self, source: Address, now: int) -> None:
        """The sender repeated SETUP (our SM was lost): answer at once."""
        self.source = source
        self.last_packet_ns = now
        self.send_sm(now)

    # ------------------------------------------------------------------ output

    def send_sm(self, now: int, flags: int = 0) -> None:
        """Queue a status message with the subscriber position and window."""
        log, c = self.log, self.config
        pos = self.subscriber_position
        if self.end_of_stream:
            flags |= Flags.SM_EOS
        sm = StatusMessage(self.session_id, self.stream_id, log.term_id(pos), log.term_offset(pos), self.window,
                           c.receiver_id, c.group_tag, flags)
        self.outbox.append((encode_frame(sm), self.source))
        self.last_sm_ns = now
        self.last_sm_position = pos

    def probe_rtt(self, now: int) -> None:
        """Ask the sender to echo `now` (RTTM with the reply flag)."""
        rttm = Rttm(self.session_id, self.stream_id, now, 0, self.config.receiver_id, Flags.RTTM_REPLY)
        self.outbox.append((encode_frame(rttm), self.source))

    def on_rttm(self, rttm: Rttm, now: int) -> None:
        """Echo a probe from the sender, or take the RTT from the echo of ours."""
        if rttm.flags & Flags.RTTM_REPLY:
            reply = Rttm(self.session_id, self.stream_id, rttm.echo_timestamp, 0, self.config.receiver_id)
            self.outbox.append((encode_frame(reply), self.source))
        elif rttm.receiver_id in (0, self.config.receiver_id):
            self.last_rtt_ns = now - rttm.echo_timestamp - rttm.reception_delta

    def _find_gap(self) -> tuple[int, int] | None:
        start = self.rebuild_position
        if start >= self.hwm_position:
            return None
        log = self.log
        limit = min(self.hwm_position, start - log.term_offset(start) + log.term_length)
        pos = start + DATA_HEADER_LENGTH
        while pos < limit and log.frame_at(pos)[0] <= 0:
            pos += DATA_HEADER_LENGTH
        return start, pos - start

    def on_timer(self, now: int) -> None:
        """NAKs for holes, periodic SMs, liveness."""
        c = self.config
        gap = self._find_gap()
        if gap is None:
            self._gap = None
        else:
            if gap != self._gap:
                self._gap = gap
                self._nak_due_ns = now + c.nak_delay_ns
            if now >= self._nak_due_ns:
                start, length = gap
                nak = Nak(self.session_id, self.stream_id, self.log.term_id(start), self.log.term_offset(start),
                          length)
                self.outbox.append((encode_frame(nak), self.source))
                self.naks_sent += 1
                self._nak_due_ns = now + c.nak_retry_ns
        if (self.last_sm_ns is None or now - self.last_sm_ns >= c.sm_interval_ns
                or self.subscriber_position - self.last_sm_position >= self.window // 4):
            self.send_sm(now)
        if now - self.last_packet_ns > c.liveness_timeout_ns:
            self.closed = True

    # ------------------------------------------------------------------ delivery

    def poll(self, handler: FragmentHandler, fragment_limit: int, now: int) -> int:
        """Deliver up to `fragment_limit` fragments in order; returns how many."""
        return self._deliver(handler, fragment_limit, now, controlled=False)

    def controlled_poll(self, handler: FragmentHandler, fragment_limit: int, now: int) -> int:
        """Like `poll`, but the handler returns an `Action`: ABORT leaves its fragment for the next poll
        and stops, BREAK consumes it and stops, COMMIT and CONTINUE go on."""
        return self._deliver(handler, fragment_limit, now, controlled=True)

    def _deliver(self, handler: FragmentHandler, fragment_limit: int, now: int, controlled: bool) -> int:
        log = self.log
        pos = self.subscriber_position
        limit = self.rebuild_position
        hdr = self._header
        mask = log.term_length - 1
        count = 0
        while pos < limit and count < fragment_limit:
            buf = log.partition(pos)
            view = memoryview(buf)
            off = pos & mask
            term_end = off + min(limit - pos, log.term_length - off)
            while off < term_end and count < fragment_limit:
                length, _, flags, ftype, _, _, _, term_id, reserved = HEADER_FIELDS.unpack_from(buf, off)
                nxt = off + ((length + 31) & ~31)
                if ftype == FrameType.DATA:
                    hdr.frame_length, hdr.flags, hdr.type, hdr.term_offset = length, flags, ftype, off
                    hdr.term_id, hdr.reserved_value = term_id, reserved
                    hdr.position = self.subscriber_position = pos + (nxt - off)
                    action = handler(view[off + DATA_HEADER_LENGTH : off + length], hdr)
                    if controlled and action == Action.ABORT:
                        self.subscriber_position = pos
                        limit = pos  # stop both loops without consuming this fragment
                        break
                    count += 1
                    if controlled and action == Action.BREAK:
                        limit = pos + (nxt - off)
                        fragment_limit = count
                pos += nxt - off
                off = nxt
            self.subscriber_position = pos
            if pos & mask == 0 and pos != self._cleaned_at:
                self._cleaned_at = pos
                self._clean_ahead(pos)
        if self.subscriber_position - self.last_sm_position >= self.window // 4:
            self.send_sm(now)
        if self.eos_position is not None and self.subscriber_position >= self.eos_position and not self.end_of_stream:
            self.end_of_stream = True
            self.send_sm(now)
        return count

    def _clean_ahead(self, term_start: int) -> None:
        """The subscriber entered a new term: wipe the partition the term after it will use."""
        self.log.partition(term_start + self.log.term_length)[:] = self._zeros

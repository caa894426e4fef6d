"""Sans-I/O receiving endpoint: turns datagrams for one stream into images.

Theory: SETUP for our stream (and wanted session) creates an `Image` and is
answered with an SM to the sender's address; DATA for a session we have no
image of is answered with an SM carrying the SETUP flag (at most every
`elicit_interval_ns` per session) so the sender repeats SETUP. Frames of known
sessions go to their image. With a `control` address (dynamic
multi-destination-cast) the endpoint also keeps announcing itself there with
session-0/stream-0 SETUP-flag SMs while it has no image. Ended images (end
of stream consumed, or liveness timeout) are reported once in `unavailable`
and their session is ignored for `liveness_timeout_ns` so lingering EOS
heartbeats do not resurrect them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from aeron_compat.native.codec import decode_frame, encode_frame, scan_datagram
from aeron_compat.native.frames import AeronWireError, Flags, FrameType, Rttm, Setup, StatusMessage
from aeron_compat.native.image import FragmentHandler, Image, ImageConfig

Address = tuple[str, int]
DATA_IDS = struct.Struct("<iiii")  # term offset, session id, stream id, term id (after the 8-byte header)


@dataclass
class ReceiverConfig:
    """Which stream to receive, and the image settings (times in nanoseconds)."""

    stream_id: int
    session_id: int | None = None
    control: Address | None = None
    image: ImageConfig = field(default_factory=ImageConfig)
    elicit_interval_ns: int = 100_000_000


class Receiver:
    """One subscription's receiving endpoint: `on_datagram`, `on_timer`, `poll`."""

    def __init__(self, config: ReceiverConfig, now: int) -> None:
        self.config = config
        self.images: dict[int, Image] = {}
        self.available: list[Image] = []
        self.unavailable: list[Image] = []
        self.outbox: list[tuple[bytes, Address]] = []
        self.invalid_datagrams = 0
        self._ignored_until: dict[int, int] = {}
        self._last_elicit_ns: dict[int, int] = {}
        self._last_announce_ns: int | None = None
        self._next_image = 0
        self.now_ns = now

    def _wanted(self, session_id: int, stream_id: int) -> bool:
        c = self.config
        return stream_id == c.stream_id and (c.session_id is None or session_id == c.session_id)

    def on_datagram(self, data: bytes, source: Address, now: int) -> None:
        """Handle one datagram from `source`."""
        self.now_ns = now
        buf = memoryview(data)
        try:
            frames = scan_datagram(buf)
        except AeronWireError:
            self.invalid_datagrams += 1
            return
        if len(frames) > 1 and self._insert_block(buf, frames, source, now):
            self.collect()
            return
        for offset, length, flags, ftype in frames:
            if ftype == FrameType.DATA or ftype == FrameType.PAD:
                term_offset, session_id, stream_id, term_id = DATA_IDS.unpack_from(buf, offset + 8)
                image = self.images.get(session_id)
                if image is not None and stream_id == image.stream_id:
                    image.source = source
                    image.insert(buf, offset, length, ftype, flags, term_id, term_offset, now)
                elif self._wanted(session_id, stream_id):
                    self._elicit_setup(session_id, stream_id, source, now)
            elif ftype in (FrameType.SETUP, FrameType.RTTM):
                try:
                    frame = decode_frame(buf[offset : offset + length])
                except AeronWireError:
                    self.invalid_datagrams += 1
                    continue
                if isinstance(frame, Setup):
                    self._on_setup(frame, source, now)
                elif isinstance(frame, Rttm) and frame.session_id in self.images:
                    self.images[frame.session_id].on_rttm(frame, now)
        self.collect()

    def _insert_block(self, buf: memoryview, frames: list[tuple[int, int, int, int]], source: Address,
                      now: int) -> bool:
        """Copy a batch of DATA frames in one go when it is a contiguous run of one term of a known image.

        Only the first and last headers are checked against each other: a sender that puts inconsistent
        headers in between only corrupts its own stream, which unauthenticated UDP allows anyway.
        """
        if not all(ftype == FrameType.DATA and length > 0 for _, length, _, ftype in frames):
            return False
        term_offset, session_id, stream_id, term_id = DATA_IDS.unpack_from(buf, 8)
        last, last_length = frames[-1][0], frames[-1][1]
        last_ids = DATA_IDS.unpack_from(buf, last + 8)
        image = self.images.get(session_id)
        if (image is None or stream_id != image.stream_id or last_ids[1:] != (session_id, stream_id, term_id)
                or last_ids[0] - term_offset != last):
            return False
        image.source = source
        return image.insert_block(buf, last + last_length, term_id, term_offset, now)

    def _elicit_setup(self, session_id: int, stream_id: int, source: Address, now: int) -> None:
        if self._ignored_until.get(session_id, now) > now:
            return
        last = self._last_elicit_ns.get(session_id)
        if last is not None and now - last < self.config.elicit_interval_ns:
            return
        self._last_elicit_ns[session_id] = now
        c = self.config.image
        sm = StatusMessage(session_id, stream_id, 0, 0, 0, c.receiver_id, c.group_tag, Flags.SM_SETUP)
        self.outbox.append((encode_frame(sm), source))

    def _on_setup(self, setup: Setup, source: Address, now: int) -> None:
        if not self._wanted(setup.session_id, setup.stream_id):
            return
        image = self.images.get(setup.session_id)
        if image is not None:
            image.on_setup_again(source, now)
            return
        if self._ignored_until.get(setup.session_id, now) > now:
            return
        try:
            image = Image(setup.session_id, setup.stream_id, setup.initial_term_id, setup.active_term_id,
                          setup.term_offset, setup.term_length, setup.mtu, source, self.config.image, now)
        except ValueError:
            self.invalid_datagrams += 1
            return
        self.images[setup.session_id] = image
        self.available.append(image)
        image.send_sm(now)

    def on_timer(self, now: int) -> None:
        """Timers of every image, plus dynamic-MDC announcements."""
        self.now_ns = now
        for image in list(self.images.values()):
            image.on_timer(now)
        control = self.config.control
        if control is not None and not self.images:
            if self._last_announce_ns is None or now - self._last_announce_ns >= self.config.elicit_interval_ns:
                c = self.config.image
                sm = StatusMessage(0, 0, 0, 0, 0, c.receiver_id, c.group_tag, Flags.SM_SETUP)
                self.outbox.append((encode_frame(sm), control))
                self._last_announce_ns = now
        for session in [s for s, t in self._ignored_until.items() if t <= now]:
            del self._ignored_until[session]
        self.collect()

    def poll(self, handler: FragmentHandler, fragment_limit: int, now: int, controlled: bool = False) -> int:
        """Deliver up to `fragment_limit` fragments, round robin over images (`controlled`: handlers return Actions)."""
        self.now_ns = now
        images = list(self.images.values())
        count = 0
        if images:
            start = self._next_image % len(images)
            self._next_image += 1
            for image in images[start:] + images[:start]:
                if count >= fragment_limit:
                    break
                poll = image.controlled_poll if controlled else image.poll
                count += poll(handler, fragment_limit - count, now)
        self.collect()
        return count

    def probe_rtt(self, now: int) -> None:
        """RTTM probes to the sender of every image."""
        for image in self.images.values():
            image.probe_rtt(now)
        self.collect()

    def collect(self) -> None:
        """Gather images' outgoing datagrams and retire ended images."""
        for session, image in list(self.images.items()):
            if image.outbox:
                self.outbox.extend(image.outbox)
                image.outbox.clear()
            if image.closed or image.end_of_stream:
                del self.images[session]
                self._ignored_until[session] = self.now_ns + image.config.liveness_timeout_ns
                self.unavailable.append(image)

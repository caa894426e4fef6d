"""Whole-buffer and incremental frame decoding.

`decode_frames` takes a complete datagram or finished stream. `FrameReader`
takes stream bytes in arbitrary chunks: `feed(chunk)` returns every frame
completed so far and keeps the partial rest. When a partial frame tells how
long it will be, the reader does not parse it again until that many bytes
are there, so a large message arriving in small chunks costs two parses
(its first piece, its last) and one join; `absorb` keeps a piece that
cannot complete it without any parse. A declared length beyond
`max_frame_size` is rejected before buffering, as is a ConnectionControl
whose header data declares more than its `HeaderLimits` allow (headers.py).
`feed_sized` also says how
many bytes each frame took; Message frames without attachments (nearly
every frame) are read by `read_plain_message`, short of the general reader.
For the engine's short paths, `read_plain_run` reads a run of them (one
channel, numbers counting up) into payloads and sizes without building
frames, after `take_buffer` hands it the held bytes; `read_plain_whole` reads
a buffer that is exactly one (a datagram).
"""

from __future__ import annotations

from .errors import encoding_error
from .frames import FRAME_TYPES, Frame, Message, read_frame
from .headers import DEFAULT_HEADER_LIMITS, HeaderLimits
from .varint import Incomplete, read_varint

DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024

_NAMES: dict[int, str] = {int(code): cls.__name__ for cls, code in FRAME_TYPES.items()}


def _truncated(buf: bytes, pos: int) -> str:
    return f"{_NAMES.get(buf[pos], 'frame')} frame at offset {pos} is truncated"


def decode_frames(data: bytes | bytearray | memoryview, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
                  headers: HeaderLimits = DEFAULT_HEADER_LIMITS) -> list[Frame]:
    """Decode a complete buffer of one or more frames."""
    buf = bytes(data)
    if not buf:
        raise encoding_error("no frame in an empty buffer")
    frames: list[Frame] = []
    pos, needed = _read_frames(buf, max_frame_size, frames, [], headers)
    if needed:
        raise encoding_error(_truncated(buf, pos))
    return frames


def read_plain_message(buf: bytes, pos: int, limit: int) -> tuple[Message | None, int] | None:
    """The Message frame at `pos` and the position after it, if it has no attachments and is complete;
    (None, where it will end) if only its payload is incomplete; else None (read_frame then reads it, or
    says why it cannot). Malformed var len ints raise as there.

    Var len ints of one and two bytes (every length and most channels and numbers) are read inline."""
    end = len(buf)
    p = pos + 1
    if p + 4 > end:
        return None
    try:
        channel = buf[p]
        if channel < 0x80:
            p += 1
        elif 0 < buf[p + 1] < 0x80:
            channel = (channel & 0x7F) | (buf[p + 1] << 7)
            p += 2
        else:
            channel, p = read_varint(buf, p)
        number = buf[p]
        if number < 0x80:
            p += 1
        elif p + 1 < end and 0 < buf[p + 1] < 0x80:
            number = (number & 0x7F) | (buf[p + 1] << 7)
            p += 2
        else:
            number, p = read_varint(buf, p)
        if p + 1 >= end or buf[p] != 0:
            return None
        n = buf[p + 1]
        if n < 0x80:
            p += 2
        else:
            n, p = read_varint(buf, p + 1)
    except (Incomplete, IndexError):
        return None
    if n > limit:
        return None
    if p + n > end:
        return None, p + n
    return Message(channel, number, (), buf[p : p + n]), p + n


def read_plain_whole(buf: bytes, limit: int) -> tuple[int, int, bytes] | None:
    """(channel, number, payload) if `buf` is exactly one plain Message (a datagram) with a channel of one or
    two bytes, a number of one to four bytes, a length of one or two and a payload within `limit`; else None
    (the general reader then reads it, or says why it cannot)."""
    try:
        if buf[0] != 3:
            return None
        channel = buf[1]
        if channel < 0x80:
            p = 2
        elif 0 < buf[2] < 0x80:
            channel = (channel & 0x7F) | (buf[2] << 7)
            p = 3
        else:
            return None
        number = buf[p]
        if number < 0x80:
            p += 1
        else:
            c = buf[p + 1]
            if 0 < c < 0x80:
                number = (number & 0x7F) | (c << 7)
                p += 2
            elif c >= 0x80 and 0 < buf[p + 2] < 0x80:
                number = (number & 0x7F) | ((c & 0x7F) << 7) | (buf[p + 2] << 14)
                p += 3
            elif c >= 0x80 and buf[p + 2] >= 0x80 and 0 < buf[p + 3] < 0x80:
                number = (number & 0x7F) | ((c & 0x7F) << 7) | ((buf[p + 2] & 0x7F) << 14) | (buf[p + 3] << 21)
                p += 4
            else:
                return None
        if buf[p]:
            return None  # attachments
        n = buf[p + 1]
        if n < 0x80:
            p += 2
        elif 0 < buf[p + 2] < 0x80:
            n = (n & 0x7F) | (buf[p + 2] << 7)
            p += 3
        else:
            return None
    except IndexError:
        return None
    if p + n != len(buf) or n > limit:
        return None
    return channel, number, buf[p:]


def read_plain_run(buf: bytes, pos: int, limit: int, payloads: list[bytes], sizes: list[int]) -> tuple[int, int, int]:
    """The complete plain Messages from `pos` of one channel with consecutive numbers: append each payload and
    wire size; return (channel, first number, position after the last). (0, 0, pos) if none is there.

    One loop without calls: later frames must repeat the first's type and channel bytes; var len ints of one
    to three bytes (numbers: four) are read inline. Anything else ends the run (the general reader takes it up,
    with its errors), as does a payload length over `limit` or a frame cut off."""
    end = len(buf)
    p = pos + 1
    try:
        if buf[pos] != 3:
            return 0, 0, pos
        channel = buf[p]
        if channel < 0x80:
            p += 1
        elif 0 < buf[p + 1] < 0x80:
            channel = (channel & 0x7F) | (buf[p + 1] << 7)
            p += 2
        else:
            return 0, 0, pos
    except IndexError:
        return 0, 0, pos
    head = buf[pos:p]
    hl = p - pos
    first = -1
    expect = -1
    append, append_size = payloads.append, sizes.append
    try:
        while pos < end and buf.startswith(head, pos):
            q = pos + hl
            b = buf[q]
            if b < 0x80:
                q += 1
            else:
                c = buf[q + 1]
                if 0 < c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    q += 2
                elif c >= 0x80 and 0 < buf[q + 2] < 0x80:
                    b = (b & 0x7F) | ((c & 0x7F) << 7) | (buf[q + 2] << 14)
                    q += 3
                elif c >= 0x80 and buf[q + 2] >= 0x80 and 0 < buf[q + 3] < 0x80:  # (past 2^21 messages)
                    b = (b & 0x7F) | ((c & 0x7F) << 7) | ((buf[q + 2] & 0x7F) << 14) | (buf[q + 3] << 21)
                    q += 4
                else:
                    break
            if b != expect and expect >= 0:
                break
            if buf[q]:
                break  # attachments
            n = buf[q + 1]
            if n < 0x80:
                q += 2
            else:
                c = buf[q + 2]
                if 0 < c < 0x80:
                    n = (n & 0x7F) | (c << 7)
                    q += 3
                elif c >= 0x80 and 0 < buf[q + 3] < 0x80:
                    n = (n & 0x7F) | ((c & 0x7F) << 7) | (buf[q + 3] << 14)
                    q += 4
                else:
                    break
            stop = q + n
            if n > limit or stop > end:
                break
            append(buf[q:stop])
            append_size(stop - pos)
            pos = stop
            if first < 0:
                first = b
            expect = b + 1
    except IndexError:
        pass
    return (channel, first, pos) if first >= 0 else (0, 0, pos)


def _read_frames(buf: bytes, limit: int, frames: list[Frame], sizes: list[int],
                 headers: HeaderLimits = DEFAULT_HEADER_LIMITS) -> tuple[int, int]:
    """Append every complete frame of `buf` (and its size); return (position reached, bytes still needed
    for the frame starting there, or 0 when the buffer ended on a frame boundary)."""
    pos = 0
    end = len(buf)
    try:
        while pos < end:
            if buf[pos] == 3:
                plain = read_plain_message(buf, pos, limit)
                if plain is not None:
                    message, stop = plain
                    if message is None:
                        return pos, stop - pos
                    frames.append(message)
                    sizes.append(stop - pos)
                    pos = stop
                    continue
            start = pos
            frame, pos = read_frame(buf, pos, limit, headers)
            frames.append(frame)
            sizes.append(pos - start)
    except Incomplete as inc:
        return pos, inc.needed - pos
    return pos, 0


class FrameReader:
    """Incremental decoder for one stream's bytes."""

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
                 headers: HeaderLimits = DEFAULT_HEADER_LIMITS) -> None:
        self.max_frame_size = max_frame_size
        self.headers = headers
        self._parts: list[bytes] = []
        self.buffered = 0
        """Bytes held for a frame not yet complete."""
        self._needed = 0
        self.frames_read = 0

    def feed(self, chunk: bytes) -> list[Frame]:
        """Add stream bytes; return the frames they complete."""
        return self.feed_sized(chunk)[0]

    def absorb(self, chunk: bytes) -> bool:
        """Keep `chunk` and return True if it cannot complete the frame awaited (else do nothing: feed it)."""
        size = self.buffered + len(chunk)
        if size < self._needed:
            self._parts.append(chunk if type(chunk) is bytes else bytes(chunk))
            self.buffered = size
            return True
        return False

    def take_buffer(self, chunk: bytes) -> bytes:
        """The bytes held plus `chunk`, leaving the reader empty: the caller reads what it can and feeds the rest
        back (counting the frames it read in `frames_read`)."""
        if not self._parts:
            return chunk if type(chunk) is bytes else bytes(chunk)
        self._parts.append(bytes(chunk))
        buf = b"".join(self._parts)
        self._parts = []
        self.buffered = 0
        self._needed = 0
        return buf

    def feed_sized(self, chunk: bytes) -> tuple[list[Frame], list[int]]:
        """Add stream bytes; return the frames they complete and the bytes each took."""
        if not chunk:
            return [], []
        self.buffered += len(chunk)
        if self.buffered < self._needed:
            self._parts.append(bytes(chunk))
            return [], []
        if self._parts:
            self._parts.append(bytes(chunk))
            buf = b"".join(self._parts)
        else:
            buf = bytes(chunk)
        frames: list[Frame] = []
        sizes: list[int] = []
        pos, needed = _read_frames(buf, self.max_frame_size, frames, sizes, self.headers)
        self._needed = needed
        if needed:
            rest = buf[pos:]
            self._parts = [rest]
            self.buffered = len(rest)
        else:
            self._parts = []
            self.buffered = 0
        self.frames_read += len(frames)
        return frames, sizes

    def finish(self) -> None:
        """The stream ended: raise ProtocolError if a frame was cut off or none came at all."""
        if self.buffered:
            buf = b"".join(self._parts)
            raise encoding_error(f"stream finished inside a {_truncated(buf, 0)} ({self.buffered} bytes left over)")
        if self.frames_read == 0:
            raise encoding_error("stream finished without a complete frame")

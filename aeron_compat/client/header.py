# The Header handed to fragment handlers: a reused flyweight (as in Aeron), refilled from each
# frame before the handler runs.  Copy the fields you need; do not keep the object.
"""`Header`: what a fragment handler learns about the fragment besides its bytes."""

from __future__ import annotations

from .codes import HEADER_LENGTH, align
from .logbuffer import Frame


class Header:
    """Fields of the current fragment's data frame header, plus stream constants."""

    __slots__ = ("_frame", "initial_term_id", "session_id", "stream_id", "term_length")

    def __init__(self, session_id: int, stream_id: int, initial_term_id: int, term_length: int) -> None:
        self.session_id = session_id
        self.stream_id = stream_id
        self.initial_term_id = initial_term_id
        self.term_length = term_length
        self._frame: Frame | None = None

    def _set(self, frame: Frame) -> None:
        self._frame = frame

    def _current(self) -> Frame:
        if self._frame is None:
            raise RuntimeError("Header used outside a fragment handler")
        return self._frame

    @property
    def position(self) -> int:
        """Stream position just after this fragment (aligned), as Aeron reports it."""
        return self._current().next_position

    @property
    def term_id(self) -> int:
        """Term id of the fragment."""
        return self._current().term_id

    @property
    def term_offset(self) -> int:
        """Offset of the fragment's header in its term."""
        return self._current().term_offset

    @property
    def frame_length(self) -> int:
        """Header plus payload length (unaligned)."""
        return self._current().length

    @property
    def aligned_length(self) -> int:
        """Frame length rounded up to 32."""
        return align(self._current().length)

    @property
    def flags(self) -> int:
        """B/E/S flags byte."""
        return self._current().flags

    @property
    def reserved_value(self) -> int:
        """The 64-bit value set by `try_claim` (0 otherwise)."""
        return self._current().reserved_value

    @property
    def type(self) -> int:
        """Frame type (data)."""
        return self._current().frame_type

    @property
    def payload_length(self) -> int:
        """Bytes of payload in this fragment."""
        return self._current().length - HEADER_LENGTH

    def __repr__(self) -> str:
        f = self._frame
        if f is None:
            return "Header(<unset>)"
        return (f"Header(session_id={self.session_id}, stream_id={self.stream_id}, term_id={f.term_id}, "
                f"term_offset={f.term_offset}, frame_length={f.length}, flags=0x{f.flags:02x})")

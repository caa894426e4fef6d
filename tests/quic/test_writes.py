"""quic/writes.py joins a loop turn's writes per stream: the one place writes are joined (the engine emits one
per send).

- Consecutive writes to one stream are held and reach aioquic as one write, when a write to another stream, a
  datagram or `write_held` (each transmit, each other command) comes; a FIN rides on the held run.
- A write that opens and ends a stream at once (an unordered message) goes straight through.
- Held bytes count as unacked at once (backpressure sees them).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from aqueduct.quic.settings import TransportSettings
from aqueduct.quic.writes import StreamWrites


class _Quic:
    """What StreamWrites uses of aioquic's QuicConnection, recording the calls."""

    def __init__(self) -> None:
        self._datagrams_pending: deque[bytes] = deque()
        self._streams: dict[int, Any] = {}
        self.calls: list[tuple[object, ...]] = []

    def send_stream_data(self, sid: int, data: bytes, end_stream: bool = False) -> None:
        self.calls.append(("stream", sid, data, end_stream))

    def send_datagram_frame(self, data: bytes) -> None:
        self.calls.append(("datagram", data))


def _writes() -> tuple[StreamWrites, _Quic]:
    quic = _Quic()
    return StreamWrites(quic, TransportSettings()), quic  # type: ignore[arg-type]


def test_writes_to_one_stream_in_a_row_reach_aioquic_as_one() -> None:
    w, quic = _writes()
    for part in (b"a", b"b", b"c"):
        w.stream(2, part, False)
    assert quic.calls == [] and w.unacked(2) == 3
    w.stream(6, b"x", False)  # another stream: the held run goes first
    w.datagram(b"d")
    w.stream(6, b"y", False)
    w.stream(6, b"", True)  # a FIN rides on the run
    assert quic.calls == [("stream", 2, b"abc", False), ("stream", 6, b"x", False), ("datagram", b"d"),
                          ("stream", 6, b"y", True)]


def test_a_write_that_opens_and_ends_a_stream_goes_straight_through() -> None:
    w, quic = _writes()
    w.stream(2, b"a", False)
    w.stream(10, b"whole", True)
    w.write_held()
    assert quic.calls == [("stream", 2, b"a", False), ("stream", 10, b"whole", True)]

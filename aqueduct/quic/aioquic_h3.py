"""aioquic's HTTP/3 layer as WebTransport drives it, and the connection seen through a session.

The door webtransport.py goes through: one of the doors to aioquic's private state (ARCHITECTURE.md;
tests/architecture/test_aioquic_stays_in_quic.py).
WebTransport (webtransport.py) runs aioquic's `H3Connection`, which keeps its settings and its table of HTTP/3
stream records private, and hands the engine's writes to a session's streams through `StreamWrites`
(writes.py), whose backpressure reads aioquic's private stream table and datagram queue (introspect.py). What
of them WebTransport needs is here, under named members:

- `WebTransportH3`: aioquic's H3Connection with WebTransport on, also announcing WT_MAX_SESSIONS (`max_sessions`)
  and the draft H3_DATAGRAM in its SETTINGS (aioquic builds them in a private method), and reading what the peer
  writes back on a bidi stream we opened (aioquic 1.x parses that as HTTP/3 frames: the stream is recorded as
  the session's WebTransport stream, as one the peer opened is once its header is read). aioquic never forgets
  a WebTransport stream's record: `stream_records` counts them (for `state_sizes()`), `forget_streams` drops
  those of streams the QUIC connection has discarded.
- `session_connection(session)`: the slice of aioquic's connection `StreamWrites` uses (writes, datagrams, and
  the stream table and datagram queue introspect.py reads for backpressure), in the session's engine stream
  IDs: a write to an engine stream goes to its WebTransport stream (`session.stream_for_write` opens one on
  the engine's first write to a new ID of ours), a datagram gets the session's quarter-stream-ID prefix, and
  a stream's unacknowledged bytes are its QUIC stream's.
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Mapping
from typing import Any, Protocol, cast

from aioquic.h3.connection import FrameType, H3Connection, H3Stream
from aioquic.quic.connection import QuicConnection

from .webtransport_wire import H3_DATAGRAM_DRAFT04, WT_MAX_SESSIONS


class WebTransportH3(H3Connection):
    """aioquic's H3Connection with WebTransport on (see the module comment)."""

    def __init__(self, quic: QuicConnection, *, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        """The WT_MAX_SESSIONS this side announces (read while aioquic's constructor sends the SETTINGS)."""
        super().__init__(quic, enable_webtransport=True)

    def create_webtransport_stream(self, session_id: int, is_unidirectional: bool = False) -> int:
        """Open a WebTransport stream of `session_id` (its header written) and return its QUIC stream ID."""
        stream_id = super().create_webtransport_stream(session_id, is_unidirectional)
        if not is_unidirectional:
            stream = H3Stream(stream_id)
            stream.frame_type = FrameType.WEBTRANSPORT_STREAM
            stream.session_id = session_id
            stream.sending_ended = True  # (our writes bypass H3: the entry goes once the peer's side ends)
            self._stream[stream_id] = stream
        return stream_id

    def _get_local_settings(self) -> dict[int, int]:
        settings = super()._get_local_settings()
        settings[WT_MAX_SESSIONS] = self.max_sessions
        settings[H3_DATAGRAM_DRAFT04] = 1
        return settings

    @property
    def stream_records(self) -> int:
        """The HTTP/3 stream records aioquic keeps (a WebTransport stream's stays until `forget_streams`)."""
        return len(self._stream)

    def forget_streams(self, live: Container[int], keep: int | None) -> None:
        """Drop the records of streams not in `live` (the QUIC streams aioquic still keeps), but `keep`'s."""
        table = self._stream
        for stream_id in [s for s in table if s not in live and s != keep]:
            del table[stream_id]


class SessionStreamIds(Protocol):
    """What `session_connection` reads of a WebTransport session (webtransport.py's protocol)."""

    @property
    def quic(self) -> QuicConnection:
        """The QUIC connection carrying the session."""
        ...

    @property
    def qid(self) -> Mapping[int, int]:
        """Engine stream ID -> QUIC stream ID (a live view)."""
        ...

    @property
    def datagram_prefix(self) -> bytes:
        """The session's quarter stream ID, as it prefixes each datagram."""
        ...

    def stream_for_write(self, vid: int) -> int | None:
        """The QUIC stream a write to engine stream `vid` goes to (a new ID of ours opens one), if any."""
        ...


def session_connection(session: SessionStreamIds) -> QuicConnection:
    """aioquic's connection as `StreamWrites` uses it, in `session`'s engine stream IDs (see the module comment)."""
    return cast(QuicConnection, _SessionConnection(session))


class _EngineStreams(Mapping[int, Any]):
    """aioquic's stream table seen through engine stream IDs (what introspect.py reads for backpressure)."""

    __slots__ = ("_session",)

    def __init__(self, session: SessionStreamIds) -> None:
        self._session = session

    def __getitem__(self, vid: int) -> Any:
        qid = self._session.qid.get(vid)
        if qid is None:
            raise KeyError(vid)
        return self._session.quic._streams[qid]

    def __iter__(self) -> Iterator[int]:
        return iter(self._session.qid)

    def __len__(self) -> int:
        return len(self._session.qid)

    def values(self) -> Any:  # every stream's buffer counts towards the connection's unacked bytes
        return self._session.quic._streams.values()


class _SessionConnection:
    """The slice of a QuicConnection StreamWrites uses (and introspect.py reads), in engine stream IDs."""

    __slots__ = ("_datagrams_pending", "_session", "_streams")

    def __init__(self, session: SessionStreamIds) -> None:
        self._session = session
        self._streams = _EngineStreams(session)
        self._datagrams_pending = session.quic._datagrams_pending

    @property
    def _streams_blocked_uni(self) -> Any:
        return self._session.quic._streams_blocked_uni

    def send_stream_data(self, vid: int, data: bytes, end_stream: bool = False) -> None:
        qid = self._session.stream_for_write(vid)
        if qid is None:
            raise ValueError(f"engine stream {vid} has no WebTransport stream")
        self._session.quic.send_stream_data(qid, data, end_stream)

    def send_datagram_frame(self, data: bytes) -> None:
        self._session.quic.send_datagram_frame(self._session.datagram_prefix + data)

"""Aqueduct over WebTransport: a browser's WebTransport session carries one Aqueduct connection.

Theory of operation. A server that serves WebTransport (`serve(webtransport=True)`) offers two ALPNs on its one
UDP port: "aqueduct" and "h3". Every connection starts as a `WebTransportProtocol`; at its first events, when
TLS has negotiated the ALPN, it decides once: "aqueduct" re-classes it to the plain `AqueductProtocol` (and
nothing below applies), "h3" makes it a WebTransport connection. The engine is the same sans-I/O engine and
does not know the difference: it sees streams and datagrams with QUIC-numbered stream IDs; this layer maps
them onto the WebTransport session's streams.

The server's `on_connection` (which makes the application's Connection) hears of a plain connection at its
ALPN and of a WebTransport one when its session is accepted: an h3 connection that never opens a session is
never an application's connection (the admission limits and the start-up deadline of limits.py still apply).

An h3 connection runs aioquic's `H3Connection` (with WebTransport on, and the settings browsers look for:
`WebTransportH3`). The first request must be an extended CONNECT with `:protocol webtransport` to the
configured path from an allowed Origin (`WebTransportOptions`); anything else is answered with an HTTP status
and no session (404 wrong path or not a WebTransport CONNECT, 403 origin, 429 over the server's session cap or
a second session on the connection: one session per connection, WT_MAX_SESSIONS = 1). An accepted CONNECT
gets 200 and creates the engine; from then on:

- stream IDs: the engine's IDs are QUIC numbering of the session's streams only. A client bidi stream with QUIC
  ID q gets q - (session + 4), so the first bidi stream the page opens after the CONNECT is the engine's stream
  0, the connection control stream, whatever order packets arrive in; a client uni stream gets the next of
  2, 6, 10, ... as it first arrives (uni streams carry no order the engine relies on). A stream the engine
  opens (its first SendStreamData on a new ID) becomes a WebTransport stream of the session
  (`create_webtransport_stream` writes its header); the two tables map both ways and are swept of streams
  aioquic has discarded (and so is aioquic's H3 stream table, which keeps WebTransport streams forever);
- stream headers and datagram prefixes: aioquic strips a WebTransport stream's header and a datagram's quarter
  stream ID on the way in, `create_webtransport_stream` and `_SessionStreams` add them on the way out; the
  engine's datagram payload limit is one quarter-stream-ID smaller;
- flow credit: the engine grants credit for the bytes it consumed; every byte of a stream this layer consumes
  itself (stream headers, the CONNECT request, HTTP/3 control and QPACK streams) is granted back at once, so
  the paced windows (paced.py) stay whole;
- resets and STOP_SENDING carry the engine's codes as WebTransport application codes (webtransport_wire.py
  maps them into the HTTP/3 space and back); a code that is none of them reaches the engine as the raw
  HTTP/3 code, which it rejects as it rejects a bad code from a QUIC peer (a protocol error), except
  WT_SESSION_GONE, with which a browser resets streams of a session it closes (the close follows);
- close: the engine's close becomes a CLOSE_WEBTRANSPORT_SESSION capsule (its code and reason) and a FIN on
  the CONNECT stream, then the QUIC connection closes once the browser has had the time to read it
  (CLOSE_GRACE_RTTS round trips); a peer's capsule, FIN or reset of the CONNECT stream is a close by the peer
  with that code; a malformed capsule closes with PROTOCOL_VIOLATION;
- 0-RTT: a session's engine never processes early data (its `replay_safe_0rtt` is off): browsers send none
  for WebTransport, and a CONNECT that came early waits for the handshake like any event.

Streams of no session (a stream naming another session, or arriving before the CONNECT was accepted) are
refused with WT_BUFFERED_STREAM_REJECTED and their bytes credited back; datagrams of no session are dropped.
aioquic internals are touched here and only here for WebTransport (its H3 stream table, the stream table).

Spec: none of the Aqueduct protocol (the mapping and its reasons: specs/decisions/quic.md, QUIC-20 to QUIC-28).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, cast

from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.buffer import encode_uint_var
from aioquic.h3 import events as h3e
from aioquic.h3.connection import FrameType, H3Connection, H3Stream
from aioquic.quic import events as qe
from aioquic.quic.connection import QuicConnection

from ..core import transport as tp
from ..errors import ConfigError
from ..wire.errors import CloseCode
from .protocol import AqueductProtocol
from .settings import paced_engine_config
from .webtransport_wire import (
    BUFFERED_STREAM_REJECTED,
    CLOSE_WEBTRANSPORT_SESSION,
    H3_DATAGRAM_DRAFT04,
    H3_NO_ERROR,
    SESSION_GONE,
    WT_MAX_SESSIONS,
    CapsuleReader,
    WebTransportError,
    app_code,
    close_capsule,
    http_code,
    parse_close,
)
from .writes import StreamWrites

if TYPE_CHECKING:
    from ..core.engine import Engine

log = logging.getLogger("aqueduct.quic")

H3_ALPN = "h3"
SESSIONS_PER_CONNECTION = 1
"""WebTransport sessions one QUIC connection may carry (WT_MAX_SESSIONS): one engine per connection."""
CLOSE_GRACE_RTTS = 3
"""Round trips between our CLOSE_WEBTRANSPORT_SESSION and the QUIC close (at least CLOSE_GRACE_MIN seconds)."""
CLOSE_GRACE_MIN = 0.05
SWEEP_MIN = 64
"""Stream-table entries below which the tables are not swept of discarded streams."""

Transport = Literal["quic", "webtransport"]


@dataclass(frozen=True, slots=True)
class WebTransportOptions:
    """Which browser sessions a server admits (`serve(webtransport=WebTransportOptions(...))`).

    `path`: the URL path a page connects to (`https://host:port/aqueduct`). `origins`: the pages allowed to
    connect, as the browser sends them in `Origin` (`"https://app.example"`, `"http://127.0.0.1:8000"`); None
    admits any origin (a page anywhere may then reach the server from a visitor's browser: for development, or
    when every client authenticates, `serve(authenticate=...)`). `max_sessions`: sessions held at once over the
    whole server; more are answered 429 (each connection carries at most one)."""

    path: str = "/aqueduct"
    origins: tuple[str, ...] | None = None
    max_sessions: int = 1024

    def __post_init__(self) -> None:
        if not self.path.startswith("/"):
            raise ConfigError(f"webtransport path must start with '/', not {self.path!r}")
        if self.max_sessions < 1:
            raise ConfigError("webtransport max_sessions must be at least 1")
        if isinstance(self.origins, str):
            raise ConfigError("webtransport origins is a tuple of origins, not one string")


class WebTransportSessions:
    """A server's count of live WebTransport sessions (capped by `options.max_sessions`) and of refused requests."""

    __slots__ = ("live", "options", "refused")

    def __init__(self, options: WebTransportOptions) -> None:
        self.options = options
        self.live = 0
        """Sessions accepted and not yet ended."""
        self.refused = 0
        """Requests answered with an error status (wrong path, origin, method, or over a cap)."""

    def admit(self, headers: Mapping[bytes, bytes], has_session: bool) -> tuple[int, str]:
        """The HTTP status for a request on a connection (200: a session may open) and why not."""
        opts = self.options
        if headers.get(b":method") != b"CONNECT" or headers.get(b":protocol") != b"webtransport":
            return 404, "not a WebTransport CONNECT"
        if headers.get(b":path", b"").split(b"?", 1)[0].decode(errors="replace") != opts.path:
            return 404, "no WebTransport endpoint at this path"
        origin = headers.get(b"origin")
        if opts.origins is not None and (origin is None or origin.decode(errors="replace") not in opts.origins):
            return 403, f"origin {origin!r} is not allowed"
        if has_session:
            return 429, f"a connection carries at most {SESSIONS_PER_CONNECTION} session"
        if self.live >= opts.max_sessions:
            return 429, f"the server holds its maximum of {opts.max_sessions} sessions"
        return 200, ""


class WebTransportH3(H3Connection):
    """aioquic's H3Connection with WebTransport on, also announcing WT_MAX_SESSIONS and the draft H3_DATAGRAM, and
    reading what the peer writes back on a bidi stream we opened (aioquic 1.x parses that as HTTP/3 frames: the
    stream is marked as the session's WebTransport stream, as one the peer opened is once its header is read)."""

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
        settings[WT_MAX_SESSIONS] = SESSIONS_PER_CONNECTION
        settings[H3_DATAGRAM_DRAFT04] = 1
        return settings


class _Streams(Mapping[int, Any]):
    """aioquic's stream table seen through engine stream IDs (what StreamWrites reads for backpressure)."""

    __slots__ = ("_wt",)

    def __init__(self, wt: WebTransportProtocol) -> None:
        self._wt = wt

    def __getitem__(self, vid: int) -> Any:
        qid = self._wt.qid.get(vid)
        if qid is None:
            raise KeyError(vid)
        return self._wt.quic._streams[qid]

    def __iter__(self) -> Iterator[int]:
        return iter(self._wt.qid)

    def __len__(self) -> int:
        return len(self._wt.qid)

    def values(self) -> Any:  # every stream's buffer counts towards the connection's unacked bytes
        return self._wt.quic._streams.values()


class _SessionStreams:
    """The slice of a QuicConnection StreamWrites uses, in engine stream IDs: writes go to the session's streams
    (opening a WebTransport stream on the engine's first write to a new ID of ours), datagrams get the session's
    quarter stream ID."""

    __slots__ = ("_datagrams_pending", "_streams", "_wt")

    def __init__(self, wt: WebTransportProtocol) -> None:
        self._wt = wt
        self._streams = _Streams(wt)
        self._datagrams_pending = wt.quic._datagrams_pending

    @property
    def _streams_blocked_uni(self) -> Any:
        return self._wt.quic._streams_blocked_uni

    def send_stream_data(self, vid: int, data: bytes, end_stream: bool = False) -> None:
        qid = self._wt.stream_for_write(vid)
        if qid is None:
            raise ValueError(f"engine stream {vid} has no WebTransport stream")
        self._wt.quic.send_stream_data(qid, data, end_stream)

    def send_datagram_frame(self, data: bytes) -> None:
        self._wt.quic.send_datagram_frame(self._wt.datagram_prefix + data)


class WebTransportProtocol(AqueductProtocol):
    """A server connection that is plain Aqueduct (ALPN "aqueduct") or one WebTransport session (ALPN "h3")."""

    def __init__(self, *args: Any, webtransport: WebTransportSessions,
                 on_connection: Callable[[AqueductProtocol], None] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sessions = webtransport
        self._on_connection = on_connection
        """Told of this connection once it is a plain one (at its ALPN) or a session (at its 200)."""
        self.h3: WebTransportH3 | None = None
        self.session_id: int | None = None
        self.datagram_prefix = b""
        self.qid: dict[int, int] = {}
        """Engine stream ID -> QUIC stream ID."""
        self.vid: dict[int, int] = {}
        """QUIC stream ID -> engine stream ID."""
        self._next_uni = 2  # the engine ID the next client uni stream gets
        self._sweep_at = SWEEP_MIN
        self._capsules = CapsuleReader()
        self._handshake_done = False
        self._session_ended = False
        self._engine_told_end = False

    def state_sizes(self) -> dict[str, int]:
        """What the WebTransport layer holds for this connection (the engine's own tables are Engine.state_sizes):
        stream-ID mappings, aioquic's H3 stream records, bytes of a partial capsule."""
        return {"webtransport_streams": len(self.qid), "h3_streams": len(self.h3._stream) if self.h3 else 0,
                "capsule_bytes": self._capsules.held}

    # ---- which kind of connection ----
    def _process_events(self) -> None:
        if self.h3 is None:
            tls = getattr(self._quic, "tls", None)
            alpn = tls.alpn_negotiated if tls is not None else None
            if alpn is None:  # (the ClientHello is not in yet: nothing to do but aioquic's bookkeeping)
                QuicConnectionProtocol._process_events(self)
                return
            if alpn != H3_ALPN:
                self.__class__ = AqueductProtocol  # type: ignore[assignment]
                if self._on_connection is not None:
                    self._on_connection(self)
                AqueductProtocol._process_events(self)
                return
            self.h3 = WebTransportH3(self._quic, enable_webtransport=True)
            self._use_session_writes()
        try:
            QuicConnectionProtocol._process_events(self)  # each event to quic_event_received
        except Exception as exc:
            self._internal_error(exc)
        self.pump()

    def _use_session_writes(self) -> None:
        writes = StreamWrites(cast(QuicConnection, _SessionStreams(self)), self.settings)
        self.writes = writes
        self.datagrams_queued = writes.datagrams_queued
        self.send_blocked = writes.send_blocked
        self.new_stream_blocked = writes.new_stream_blocked
        self.connection_blocked = writes.connection_blocked
        self.unacked = writes.unacked
        self.unacked_total = writes.unacked_total

    # ---- events up ----
    def quic_event_received(self, event: qe.QuicEvent) -> None:
        h3 = self.h3
        if h3 is None:  # (before the ALPN is known only a failed handshake can arrive)
            if isinstance(event, qe.ConnectionTerminated):
                self._on_terminated(tp.ConnectionTerminated(event.error_code, event.reason_phrase, True))
            return
        now = self._loop.time()
        engine = self.engine
        if isinstance(event, qe.StreamDataReceived):
            given = 0
            for ev in h3.handle_event(event):
                given += self._h3_event(ev, now)
            if len(event.data) > given:  # what aioquic's H3 consumed itself: credit it back at once
                self.quic.grant(event.stream_id, len(event.data) - given)
        elif isinstance(event, qe.DatagramFrameReceived):
            for ev in h3.handle_event(event):
                self._h3_event(ev, now)
        elif isinstance(event, qe.StreamReset | qe.StopSendingReceived):
            self._reset_received(event, now)
            h3.handle_event(event)
        elif isinstance(event, qe.HandshakeCompleted):
            if not self._check_handshake(event):
                return
            self._handshake_done = True
            if engine is not None:
                engine.handle_event(tp.HandshakeCompleted(False, event.session_resumed), now)
        elif isinstance(event, qe.ConnectionTerminated):
            ended = tp.ConnectionTerminated(event.error_code, event.reason_phrase, not self._closing_locally)
            self._on_terminated(ended)
            self._end_session()
            self._tell_engine_end(ended, now)

    def _check_handshake(self, event: qe.HandshakeCompleted) -> bool:
        ok = super()._check_handshake(event)
        self.datagram_payload_limit = max(0, self.datagram_payload_limit - len(self.datagram_prefix))
        return ok

    def _h3_event(self, ev: h3e.H3Event, now: float) -> int:
        """Handle one H3 event; the stream bytes it handed the engine."""
        engine = self.engine
        if isinstance(ev, h3e.WebTransportStreamDataReceived):
            if engine is None or ev.session_id != self.session_id or self._session_ended:
                self._refuse_stream(ev.stream_id)
                return 0
            vid = self._peer_stream(ev.stream_id)
            if vid is None:
                return 0
            engine.handle_event(tp.StreamDataReceived(vid, ev.data, ev.stream_ended), now)
            return len(ev.data)
        if isinstance(ev, h3e.DatagramReceived):
            if engine is not None and ev.stream_id == self.session_id and not self._session_ended:
                engine.handle_event(tp.DatagramReceived(ev.data), now)
            return 0
        if isinstance(ev, h3e.HeadersReceived):
            if ev.stream_id != self.session_id:
                self._request(ev)
            return 0
        if isinstance(ev, h3e.DataReceived) and ev.stream_id == self.session_id and not self._session_ended:
            self._session_data(ev.data, ev.stream_ended, now)
        return 0

    def _request(self, ev: h3e.HeadersReceived) -> None:
        """A request: the session's CONNECT (200, and the engine starts) or an error status."""
        assert self.h3 is not None
        headers = dict(ev.headers)
        status, why = self.sessions.admit(headers, self.session_id is not None)
        if status != 200:
            self.sessions.refused += 1
            log.info("refused a WebTransport request (peer %s): %d %s", self.peer_address, status, why)
            self.h3.send_headers(ev.stream_id, [(b":status", str(status).encode())], end_stream=True)
            return
        self.h3.send_headers(ev.stream_id, [(b":status", b"200"), (b"sec-webtransport-http3-draft", b"draft02")])
        self.session_id = ev.stream_id
        self.sessions.live += 1
        self.datagram_prefix = encode_uint_var(ev.stream_id // 4)
        self.start_engine()
        if self._handshake_done and self.engine is not None:
            self.engine.handle_event(tp.HandshakeCompleted(False, False), self._loop.time())
        if self._on_connection is not None:
            self._on_connection(self)

    def start_engine(self) -> Engine:
        """The session's engine: never processes 0-RTT data; datagram payloads leave room for the prefix."""
        if self.engine is None:
            from ..core.engine import Engine

            peer = self._quic._remote_max_datagram_frame_size
            limit = self.settings.datagram_payload_limit(peer) if peer is not None else 0
            self.datagram_payload_limit = max(0, limit - len(self.datagram_prefix))
            config = paced_engine_config(replace(self._engine_config, replay_safe_0rtt=False), self.settings,
                                         self.datagram_payload_limit)
            self.engine = Engine(self.side, headers=self._headers, config=config, now=self._loop.time())
        return self.engine

    def _session_data(self, data: bytes, ended: bool, now: float) -> None:
        """Capsules on the CONNECT stream: CLOSE_WEBTRANSPORT_SESSION (or the stream's end) closes the session."""
        try:
            for kind, value in self._capsules.feed(data):
                if kind == CLOSE_WEBTRANSPORT_SESSION:
                    code, reason = parse_close(value)
                    self._peer_closed(code, reason, now)
                    return
        except WebTransportError as exc:
            self._protocol_violation(str(exc), now)
            return
        if ended:
            self._peer_closed(0, "the WebTransport session's CONNECT stream ended", now)

    def _reset_received(self, event: qe.StreamReset | qe.StopSendingReceived, now: float) -> None:
        qid = event.stream_id
        if qid == self.session_id:
            if not self._session_ended:
                self._peer_closed(0, "the WebTransport session's CONNECT stream was reset", now)
            return
        vid = self.vid.get(qid)
        engine = self.engine
        if vid is None or engine is None or event.error_code == SESSION_GONE:
            return
        mapped = app_code(event.error_code)
        code = mapped if mapped is not None else event.error_code
        if isinstance(event, qe.StreamReset):
            engine.handle_event(tp.StreamReset(vid, code), now)
        else:
            engine.handle_event(tp.StopSendingReceived(vid, code), now)

    def _protocol_violation(self, why: str, now: float) -> None:
        engine = self.engine
        if engine is not None and not engine.closed:
            engine.close(CloseCode.PROTOCOL_VIOLATION, why, now=now)

    # ---- stream IDs ----
    def _peer_stream(self, qid: int) -> int | None:
        """The engine ID of the client's stream `qid` (a new one gets the next of its kind)."""
        vid = self.vid.get(qid)
        if vid is not None:
            return vid
        assert self.session_id is not None
        if qid & 2:
            vid = self._next_uni
            self._next_uni += 4
        else:
            vid = qid - self.session_id - 4
            if vid < 0:
                self._protocol_violation(f"WebTransport stream {qid} opened before its session", self._loop.time())
                return None
        self._map(vid, qid)
        return vid

    def stream_for_write(self, vid: int) -> int | None:
        """The QUIC stream the engine's write to `vid` goes to; a new ID of ours opens a WebTransport stream."""
        qid = self.qid.get(vid)
        if qid is None and vid & 1 and self.h3 is not None and self.session_id is not None:
            qid = self.h3.create_webtransport_stream(self.session_id, is_unidirectional=bool(vid & 2))
            self._map(vid, qid)
        return qid

    def _map(self, vid: int, qid: int) -> None:
        self.qid[vid] = qid
        self.vid[qid] = vid
        if len(self.qid) > self._sweep_at:
            self._sweep()

    def _sweep(self) -> None:
        """Forget streams aioquic has discarded (in our tables and in its H3 table): amortised O(1) per stream."""
        live = self.quic._streams
        for qid in [q for q in self.vid if q not in live]:
            del self.qid[self.vid.pop(qid)]
        assert self.h3 is not None
        table = self.h3._stream
        for qid in [q for q in table if q not in live and q != self.session_id]:
            del table[qid]
        self._sweep_at = max(SWEEP_MIN, 2 * len(self.qid))

    def _refuse_stream(self, qid: int) -> None:
        quic = self.quic
        try:
            quic.stop_stream(qid, BUFFERED_STREAM_REJECTED)
            if not qid & 2:
                quic.reset_stream(qid, BUFFERED_STREAM_REJECTED)
        except (ValueError, AssertionError):
            pass  # (already refused)

    # ---- commands down ----
    def _execute(self, cmd: tp.TransportCommand) -> None:
        kind = type(cmd)
        if kind is tp.SendStreamData or kind is tp.SendDatagram:
            super()._execute(cmd)
            return
        self.writes.write_held()
        quic = self.quic
        try:
            if isinstance(cmd, tp.GrantCredit):  # (a stream already forgotten still returns its connection credit)
                quic.grant(self.qid.get(cmd.stream_id, -1), cmd.nbytes)
            elif isinstance(cmd, tp.ResetStream | tp.StopSending):
                target = self.qid.get(cmd.stream_id)
                if target is not None:
                    stop = isinstance(cmd, tp.StopSending)
                    (quic.stop_stream if stop else quic.reset_stream)(target, http_code(cmd.error_code))
            elif isinstance(cmd, tp.CloseConnection):
                self.close_connection(cmd.error_code, cmd.reason)
        except (ValueError, AssertionError) as exc:
            log.debug("dropped %s: %s", kind.__name__, exc)

    def close_connection(self, error_code: int, reason: str) -> None:
        """With a session: CLOSE_WEBTRANSPORT_SESSION and FIN on its CONNECT stream, then the QUIC close a few
        round trips later (or when the browser closes first). Without one: the QUIC close."""
        h3, sid = self.h3, self.session_id
        if h3 is None or sid is None or self._session_ended:
            super().close_connection(error_code, reason)
            return
        self.writes.write_held()
        self._end_session()
        self._closing_locally = True
        try:
            h3.send_data(sid, close_capsule(error_code, reason), end_stream=True)
        except Exception:  # (the CONNECT stream is gone: the QUIC close says it all)
            log.debug("no CLOSE_WEBTRANSPORT_SESSION sent", exc_info=True)
        self._transmit_soon()
        grace = max(CLOSE_GRACE_MIN, CLOSE_GRACE_RTTS * self.rtt_smoothed)
        self._loop.call_later(grace, self._close_quic, reason)

    def _close_quic(self, reason: str) -> None:
        if not self.terminated.done():
            AqueductProtocol.close_connection(self, H3_NO_ERROR, reason)

    def _peer_closed(self, code: int, reason: str, now: float) -> None:
        """The browser closed the session: the engine hears a close by the peer, and the QUIC connection ends."""
        self._end_session()
        self._tell_engine_end(tp.ConnectionTerminated(code, reason, True), now)
        AqueductProtocol.close_connection(self, H3_NO_ERROR, "WebTransport session closed")
        self._closing_locally = False  # (the close was the peer's)

    def _tell_engine_end(self, event: tp.ConnectionTerminated, now: float) -> None:
        if self.engine is not None and not self._engine_told_end:
            self._engine_told_end = True
            self.engine.handle_event(event, now)

    def _end_session(self) -> None:
        if self.session_id is not None and not self._session_ended:
            self.sessions.live -= 1
        self._session_ended = True

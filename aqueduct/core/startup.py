"""Connection start-up: Version + ConnectionControl, headers, and the server's hold gate (0-RTT).

Spec: "Connection start-up" (the connection control stream, Version and
ConnectionControl, the entrypoint) and "0-RTT" (a server processes nothing
received as early data unless it is safe to replay).

Client: sends Version + ConnectionControl on bidi stream 0 at construction
and prefixes every new stream and datagram with Version until the server's
ConnectionControl arrives on stream 0 (streams.py keeps that flag).

Server: admits transport events through two gates, holding what cannot pass
yet in arrival order (bounded by max_buffered_bytes, each event counted with
held_item_overhead on top of its bytes, else LIMIT_EXCEEDED):
  1. the handshake gate: nothing (not even stream 0) is processed until
     HandshakeCompleted, unless config.replay_safe_0rtt;
  2. the headers gate: only stream 0 (the client's first bidi stream, the
     connection control stream) is processed until the client's Version +
     ConnectionControl have been; then the server replies on stream 0,
     creates the entrypoint receiver (opening its control stream) and
     replays everything held;
  3. with config.hold_until_accepted, the acceptance gate: after the
     client's headers Startup reports PeerAwaitingAcceptance and holds the
     rest (0-RTT messages included) until `accept_peer()`; only then does
     step 2's reply, entrypoint and replay happen.
The server sends nothing before the client's headers (nor, with the
acceptance gate, before it accepted them).

Startup owns the gates, the held events, both sides' headers and the
entrypoint handle; it passes events on through the `dispatch` callback the
engine binds (incoming.py's), so it imports nothing above it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from ..wire.channel_id import ENTRYPOINT, Side
from ..wire.errors import CloseCode, ProtocolError
from ..wire.frames import ConnectionControl, Version, encode_frames
from ..wire.headers import Headers
from .app import HeadersReceived, PeerAwaitingAcceptance
from .context import Context
from .halves import Halves
from .receiving import Receivers
from .streams import StreamTable
from .transport import DatagramReceived, HandshakeCompleted, SendStreamData, StreamDataReceived, TransportEvent


def _unbound(event: TransportEvent) -> None:
    raise AssertionError("Startup.bind was not called")


class Startup:
    """The headers exchange and the server's gates."""

    def __init__(self, ctx: Context, streams: StreamTable, halves: Halves, rx: Receivers, headers: Headers) -> None:
        self._ctx = ctx
        self._out = ctx.out
        self._side = ctx.side
        self._max_held = ctx.config.max_buffered_bytes
        self._overhead = ctx.config.held_item_overhead
        self._streams = streams
        self._rx = rx
        self.headers = headers
        self.peer_headers: Headers | None = None
        self.entrypoint: int | None = None
        self.gate_open = ctx.side is Side.CLIENT or ctx.config.replay_safe_0rtt
        self.accepted = ctx.side is Side.CLIENT or not ctx.config.hold_until_accepted
        self._held: list[TransportEvent] = []  # (a list: an empty deque costs ~600 B per connection)
        self.held_bytes = 0
        self._releasing = False
        self._dispatch: Callable[[TransportEvent], None] = _unbound
        if ctx.side is Side.CLIENT:
            streams.open_connection_stream(encode_frames([Version(), ConnectionControl(headers)]))
            self.entrypoint = halves.add_sender(ENTRYPOINT, reachable=True, exposed=True).handle

    @property
    def peer_header_bytes(self) -> int:
        """Bytes of the peer's headers kept for the connection's life (bounded by max_header_bytes)."""
        return sum(len(k) + len(v) for k, v in self.peer_headers or ())

    def bind(self, dispatch: Callable[[TransportEvent], None]) -> None:
        """Where admitted events go (incoming.py)."""
        self._dispatch = dispatch

    @property
    def passing(self) -> bool:
        """Whether every event passes straight through now (gates open, nothing held, headers in)."""
        return self.gate_open and not self._held and (
            self._side is Side.CLIENT or (self.peer_headers is not None and self.accepted))

    def admit(self, event: TransportEvent) -> None:
        """An event from the transport: dispatch it, or hold it until the gates let it through."""
        if isinstance(event, HandshakeCompleted):
            if not self.gate_open:
                self.gate_open = True
                self._release_held()
            return
        if self._side is Side.SERVER and not self._may_process(event):
            self._hold(event)
            return
        self._dispatch(event)

    def _may_process(self, event: TransportEvent) -> bool:
        if not self.gate_open:
            return False
        if self.peer_headers is not None:
            return self.accepted
        return getattr(event, "stream_id", None) == 0

    def _hold(self, event: TransportEvent) -> None:
        # every held event costs a fixed overhead on top of its bytes: empty datagrams are not free
        self.held_bytes += self._overhead
        if isinstance(event, StreamDataReceived | DatagramReceived):
            self.held_bytes += len(event.data)
        if self.held_bytes > self._max_held:
            raise ProtocolError(
                f"more than {self._max_held} bytes held before the client's headers", CloseCode.LIMIT_EXCEEDED
            )
        self._held.append(event)

    def _release_held(self) -> None:
        """Process held events in arrival order, re-holding what still may not pass."""
        if self._releasing:
            return
        self._releasing = True
        try:
            while self._held and not self._ctx.closed:
                pending = deque(self._held)
                self._held.clear()
                self.held_bytes = 0
                progressed = False
                while pending:
                    event = pending.popleft()
                    if not self._may_process(event):
                        self._hold(event)
                        continue
                    had_headers = self.peer_headers is not None
                    self._dispatch(event)
                    progressed = True
                    if self._ctx.closed:
                        return
                    if not had_headers and self.peer_headers is not None:
                        for rest in pending:  # keep per-stream order: re-held events go first
                            self._hold(rest)
                        break
                if not progressed:
                    return
        finally:
            self._releasing = False

    def on_connection_control(self, headers: Headers) -> None:
        """The peer's ConnectionControl, read in its place on stream 0."""
        if self.peer_headers is not None:
            raise ProtocolError("ConnectionControl received twice")
        self.peer_headers = headers
        self._streams.headers_arrived()
        if self._side is Side.CLIENT:
            self._out.event(HeadersReceived(headers))
            return
        if not self.accepted:
            self._out.event(PeerAwaitingAcceptance(headers))
            return
        self._start_serving(headers)

    def accept(self) -> None:
        """Server: the application accepted the client whose headers came (acceptance gate): serve it now."""
        if self.accepted or self.peer_headers is None or self._ctx.closed:
            return
        self.accepted = True
        self._start_serving(self.peer_headers)

    def _start_serving(self, headers: Headers) -> None:
        """Server: reply with our headers, create the entrypoint receiver, replay what was held."""
        self._out.command(SendStreamData(0, encode_frames([Version(), ConnectionControl(self.headers)])))
        r = self._rx.create_entrypoint(ENTRYPOINT)
        self.entrypoint = r.handle
        self._out.event(HeadersReceived(headers, entrypoint=r.handle))
        if self.gate_open and not self._releasing:
            self._release_held()

    @staticmethod
    def check_version(frame: Version) -> None:
        """A Version frame from the peer must name our version."""
        if frame.version != Version().version:
            raise ProtocolError(f"peer speaks Aqueduct {frame.version!r}", CloseCode.VERSION_MISMATCH)

    def clear(self) -> None:
        """The connection is over: nothing held any more."""
        self._held.clear()
        self.held_bytes = 0

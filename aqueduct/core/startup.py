"""Connection start-up: Version + ConnectionControl, and the server's hold gate.

Client: sends Version + ConnectionControl on bidi stream 0 at construction
(engine.py) and prefixes every new stream and datagram with Version until
the server's ConnectionControl arrives on stream 0.

Server: admits transport events through two gates, holding what cannot pass
yet in arrival order (bounded by max_buffered_bytes, else LIMIT_EXCEEDED):
  1. the handshake gate: nothing (not even stream 0) is processed until
     HandshakeCompleted, unless config.replay_safe_0rtt;
  2. the headers gate: only stream 0 (the client's first bidi stream, the
     connection control stream) is processed until the client's Version +
     ConnectionControl have been; then the server replies on stream 0,
     creates the entrypoint receiver (opening its control stream) and
     replays everything held;
  3. with config.hold_until_accepted, the acceptance gate: after the
     client's headers the engine reports PeerAwaitingAcceptance and holds
     the rest (0-RTT messages included) until `accept_peer()`; only then
     does step 2's reply, entrypoint and replay happen.
The server sends nothing before the client's headers (nor, with the
acceptance gate, before it accepted them).
"""

# mypy: disable-error-code="misc"
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from ..wire.channel_id import ENTRYPOINT, Side
from ..wire.errors import CloseCode, ProtocolError
from ..wire.frames import ConnectionControl, Version, encode_frames
from ..wire.headers import Headers
from .app import HeadersReceived, PeerAwaitingAcceptance
from .transport import DatagramReceived, HandshakeCompleted, SendStreamData, StreamDataReceived, TransportEvent

if TYPE_CHECKING:
    from .engine import Engine


class StartupMixin:
    """Start-up and the server's gates."""

    _peer_headers: Headers | None
    _entrypoint: int | None
    _accepted: bool

    def _admit(self: Engine, event: TransportEvent) -> None:
        if isinstance(event, HandshakeCompleted):
            if not self._gate_open:
                self._gate_open = True
                self._release_held()
            return
        if self._side is Side.SERVER and not self._may_process(event):
            self._hold(event)
            return
        self._dispatch(event)

    def _may_process(self: Engine, event: TransportEvent) -> bool:
        if not self._gate_open:
            return False
        if self._peer_headers is not None:
            return self._accepted
        return getattr(event, "stream_id", None) == 0

    def _hold(self: Engine, event: TransportEvent) -> None:
        if isinstance(event, StreamDataReceived | DatagramReceived):
            self._held_bytes += len(event.data)
            if self._held_bytes > self.config.max_buffered_bytes:
                self._limit(f"more than {self.config.max_buffered_bytes} bytes held before the client's headers")
        self._held.append(event)

    def _release_held(self: Engine) -> None:
        """Process held events in arrival order, re-holding what still may not pass."""
        if self._releasing:
            return
        self._releasing = True
        try:
            while self._held and not self._ctx.closed:
                pending = deque(self._held)
                self._held.clear()
                self._held_bytes = 0
                progressed = False
                while pending:
                    event = pending.popleft()
                    if not self._may_process(event):
                        self._hold(event)
                        continue
                    had_headers = self._peer_headers is not None
                    self._dispatch(event)
                    progressed = True
                    if self._ctx.closed:
                        return
                    if not had_headers and self._peer_headers is not None:
                        for rest in pending:  # keep per-stream order: re-held events go first
                            self._hold(rest)
                        break
                if not progressed:
                    return
        finally:
            self._releasing = False

    def _on_connection_control(self: Engine, headers: Headers) -> None:
        """The peer's ConnectionControl, read in its place on stream 0."""
        if self._peer_headers is not None:
            raise ProtocolError("ConnectionControl received twice")
        self._peer_headers = headers
        self._streams.headers_arrived()
        if self._side is Side.CLIENT:
            self._out.event(HeadersReceived(headers))
            return
        if not self._accepted:
            self._out.event(PeerAwaitingAcceptance(headers))
            return
        self._start_serving(headers)

    def _start_serving(self: Engine, headers: Headers) -> None:
        """Server: reply with our headers, create the entrypoint receiver, replay what was held."""
        self._out.command(SendStreamData(0, encode_frames([Version(), ConnectionControl(self._headers)])))
        r = self._create_receiver(ENTRYPOINT, claimed=True)
        self._halves.mark_claimed(ENTRYPOINT)
        r.exposed = True
        self._entrypoint = r.handle
        self._out.event(HeadersReceived(headers, entrypoint=r.handle))
        if self._gate_open and not self._releasing:
            self._release_held()

    def _check_version(self: Engine, frame: Version) -> None:
        if frame.version != Version().version:
            raise ProtocolError(f"peer speaks Aqueduct {frame.version!r}", CloseCode.VERSION_MISMATCH)

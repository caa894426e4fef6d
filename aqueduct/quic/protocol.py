"""The aioquic adapter: one `AqueductProtocol` drives one Engine from one QUIC connection.

Events flow up: aioquic events are translated 1:1 into transport events and
fed to the engine in order; after every batch the adapter reports aioquic's
smoothed RTT, executes the engine's commands (stream writes, resets,
datagrams, credit grants, close), hands the engine's application events to a
listener, re-arms a loop timer at `engine.next_deadline()`, and transmits.

The adapter takes no protocol decisions. The transport checks it does make
at HandshakeCompleted are transport matters: the peer must support RFC 9221
datagrams (else close with DATAGRAMS_UNSUPPORTED) and, when the client pins
a certificate fingerprint, the server's certificate must match; nothing
reaches the engine before these pass. It also provides what the API layer
needs for backpressure: whether a stream's (or the connection's) unacked
send buffer is over its bound, and a way to wait until it is not.

How a connection ends (aioquic's termination, a failed handshake, a fault
while handling its events, a vanished server) is endings.py's.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from aioquic.quic import events as qe
from aioquic.quic.connection import QuicConnection
from aioquic.quic.packet import QuicErrorCode, QuicFrameType

from ..aio import mark_seen
from ..core import transport as tp
from ..core.app import AppEvent
from ..core.config import EngineConfig
from ..errors import ConnectionLost
from ..wire.channel_id import Side
from ..wire.errors import CloseCode
from . import introspect
from .aioquic_protocol import AioquicProtocol
from .aioquic_tls import peer_certificate
from .burst import Burst
from .certs import fingerprint
from .drain import drain, drainable_socket
from .endings import Endings
from .settings import TransportSettings, paced_engine_config
from .writes import StreamWrites

if TYPE_CHECKING:
    from ..core.engine import Engine

log = logging.getLogger("aqueduct.quic")
# aioquic logs every connection error it closes with as a warning on its "quic" logger, which Python's last-resort
# handler printed beside our error; a library adds a NullHandler (configured logging still sees the records).
logging.getLogger("quic").addHandler(logging.NullHandler())

_SEND_STREAM_DATA, _SEND_DATAGRAM = tp.SendStreamData, tp.SendDatagram
TRANSMIT_EARLY = 64 * 1024
"""Bytes the application writes in one loop turn after which they leave at once, not at the turn's end: a producer
that never waits would otherwise compute its whole send buffer, send it as one burst, then idle while the peer works
through it (16 KiB packets: 64 B one way ~160k -> ~210k msgs/s; neutral with 1,200-byte packets)."""
BAD_CERTIFICATE = QuicErrorCode.CRYPTO_ERROR + 42  # TLS alert bad_certificate as a QUIC transport error

AppListener = Callable[[list[AppEvent]], None]


class AqueductProtocol(Endings, AioquicProtocol):
    """Feeds aioquic events to an Engine and executes the Engine's commands."""

    def __init__(
        self,
        quic: QuicConnection,
        stream_handler: Any = None,
        *,
        side: Side,
        headers: Iterable[tuple[str, bytes]] = (),
        engine_config: EngineConfig | None = None,
        settings: TransportSettings | None = None,
        pinned_fingerprint: str | None = None,
        peer: str = "",
        trust: str = "",
    ) -> None:
        super().__init__(quic, stream_handler)
        self.side = side
        self.settings = settings or TransportSettings()
        self._headers = tuple(headers)
        self._engine_config = engine_config or EngineConfig()
        self._pinned = pinned_fingerprint
        self._peer = peer  # "host:port" as the application named it, for errors before the handshake completes
        self._trust = trust  # what a client verifies the server against, for TLS failure messages
        self.engine: Engine | None = None
        self.listener: AppListener | None = None
        self.handshake: asyncio.Future[qe.HandshakeCompleted] = self.loop.create_future()
        self.handshake.add_done_callback(mark_seen)
        self.terminated: asyncio.Future[tp.ConnectionTerminated] = self.loop.create_future()
        self.early_data_attempted = False
        self.datagram_payload_limit = self.settings.datagram_payload_limit(self.settings.max_datagram_frame_size)
        self.writes = StreamWrites(quic, self.settings)
        """Our writes to aioquic and the unacked-bytes figures (writes.py)."""
        writes = self.writes
        self.datagrams_queued: deque[bytes] = writes.datagrams_queued
        self.send_blocked = writes.send_blocked
        self.new_stream_blocked = writes.new_stream_blocked
        self.connection_blocked = writes.connection_blocked
        self.unacked = writes.unacked
        self.unacked_total = writes.unacked_total
        self._closing_locally = False
        self._handshake_ok = False
        self._engine_timer: asyncio.TimerHandle | None = None
        self._drain_sock: socket.socket | None = None
        self._engine_timer_at: float | None = None
        self._keepalive: asyncio.TimerHandle | None = None
        self._writers: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []
        self._rtt_told = 0.0  # the smoothed RTT last given to the engine
        self._wrote = False  # the application wrote since the last transmit: its packet carries any pending ACK
        self.burst: Burst | None = None  # a server connection's: the burst its server is handing over
        self._unreachable = 0  # ICMP port unreachables since the server's last packet (a client's)

    @property
    def peer_address(self) -> tuple[str, int] | None:
        """The peer's address on the current network path ((host, port), IPv4-mapped prefix removed), if known."""
        return introspect.peer_address(self.quic)

    @property
    def rtt_smoothed(self) -> float:
        """aioquic's smoothed RTT estimate in seconds."""
        return introspect.smoothed_rtt(self.quic)

    @property
    def rtt_min(self) -> float:
        """The smallest RTT sample aioquic has seen, in seconds (inf before the first)."""
        return introspect.min_rtt(self.quic)

    # ---- engine lifecycle ----
    def start_engine(self) -> Engine:
        """Create the engine (client: before connecting; server: once the ClientHello's parameters are known)."""
        if self.engine is None:
            peer = self.quic.peer_max_datagram_frame_size
            if peer is not None:
                self.datagram_payload_limit = self.settings.datagram_payload_limit(peer)
            from ..core.engine import Engine

            config = paced_engine_config(self._engine_config, self.settings, self.datagram_payload_limit)
            self.engine = Engine(self.side, headers=self._headers, config=config, now=self.loop.time())
            self._arm_keepalive()
        return self.engine

    # ---- events up ----
    def process_events(self) -> None:
        """Feed aioquic's events to the engine, then pump.

        Stream data and datagrams at the head of aioquic's queue (nearly all events; one per datagram
        message) go straight to the engine, with one clock reading for the batch; the rest, in order, take
        aioquic's own dispatch (connection IDs, waiters) and then `quic_event_received`."""
        try:
            engine = self.engine
            if engine is None and not self.quic.is_client:
                engine = self.start_engine()
            if engine is not None:
                queue = self.pending_events
                now = self.loop.time()
                while queue:
                    event = queue[0]
                    translated: tp.TransportEvent
                    if type(event) is qe.StreamDataReceived:
                        translated = tp.StreamDataReceived(event.stream_id, event.data, event.end_stream)
                    elif type(event) is qe.DatagramFrameReceived:
                        translated = tp.DatagramReceived(event.data)
                    else:
                        break
                    queue.popleft()
                    engine.handle_event(translated, now)
            self.dispatch_events()
            self._report_rtt()
        except Exception as exc:
            self._internal_error(exc)
        self.pump()

    def _report_rtt(self) -> None:
        """Give the engine aioquic's smoothed RTT if it moved: after the events of received datagrams (an ACK is
        the only thing that moves it), before the pump that follows them."""
        engine, quic = self.engine, self.quic
        if engine is None:
            return
        rtt = introspect.smoothed_rtt(quic)
        if rtt != self._rtt_told and introspect.rtt_initialized(quic):
            self._rtt_told = rtt
            engine.update_rtt(rtt)

    def quic_event_received(self, event: qe.QuicEvent) -> None:
        engine = self.engine
        if engine is None:
            return
        now = self.loop.time()
        translated: tp.TransportEvent | None = None
        if isinstance(event, qe.StreamDataReceived):
            translated = tp.StreamDataReceived(event.stream_id, event.data, event.end_stream)
        elif isinstance(event, qe.DatagramFrameReceived):
            translated = tp.DatagramReceived(event.data)
        elif isinstance(event, qe.StreamReset):
            translated = tp.StreamReset(event.stream_id, event.error_code)
        elif isinstance(event, qe.StopSendingReceived):
            translated = tp.StopSendingReceived(event.stream_id, event.error_code)
        elif isinstance(event, qe.HandshakeCompleted):
            if not self._check_handshake(event):
                return
            translated = tp.HandshakeCompleted(event.early_data_accepted, event.session_resumed)
        elif isinstance(event, qe.ConnectionTerminated):
            translated = tp.ConnectionTerminated(event.error_code, event.reason_phrase, not self._closing_locally)
            self._on_terminated(translated)
        if translated is not None:
            engine.handle_event(translated, now)

    def _check_handshake(self, event: qe.HandshakeCompleted) -> bool:
        if self.quic.peer_max_datagram_frame_size is None:
            self.close_connection(CloseCode.DATAGRAMS_UNSUPPORTED, "peer does not support QUIC datagrams (RFC 9221)")
            self._fail_handshake("peer does not support QUIC datagrams", CloseCode.DATAGRAMS_UNSUPPORTED)
            return False
        if self._pinned is not None and not event.session_resumed:
            # (A resumed session shows no certificate; its ticket came from a server that passed this check.)
            cert = peer_certificate(self.quic.tls)
            if cert is None or fingerprint(cert) != self._pinned:
                self._closing_locally = True
                self.quic.close(BAD_CERTIFICATE, QuicFrameType.CRYPTO, "certificate fingerprint mismatch")
                self._fail_handshake("server certificate does not match the pinned fingerprint", BAD_CERTIFICATE)
                return False
        self.datagram_payload_limit = self.settings.datagram_payload_limit(self.quic.peer_max_datagram_frame_size)
        self._handshake_ok = True
        if not self.handshake.done():
            self.handshake.set_result(event)
        return True

    # ---- commands down ----
    def pump(self) -> None:
        """Execute the engine's commands, deliver its events, re-arm timers, wake writers (no transmit).
        Never raises: a failure closes this connection (`_internal_error`)."""
        try:
            self._pump()
        except Exception as exc:
            self._internal_error(exc)

    def _pump(self) -> None:
        engine = self.engine
        if engine is None:
            return
        for cmd in engine.commands():
            self._execute(cmd)
        events = engine.events()
        if events and self.listener is not None:
            self.listener(events)
        self._arm_engine_timer()
        if self._writers:
            self._wake_writers()

    def flush(self) -> None:
        """After an application call into the engine: hand its writes to aioquic now (backpressure counts
        them), and pump the rest and transmit once this loop turn ends.

        Deferring coalesces every send and take of one turn into full packets (one packet per message
        would cost aioquic ~100 us of CPU at each end) and one pump instead of one per call.
        """
        engine = self.engine
        if engine is None:
            return
        writes = self.writes
        for cmd in engine.commands():
            kind = type(cmd)
            if kind is _SEND_STREAM_DATA:  # (one per send, or per message for datagrams: inline)
                writes.stream(cmd.stream_id, cmd.data, cmd.end_stream)  # type: ignore[union-attr]
            elif kind is _SEND_DATAGRAM:
                writes.datagram(cmd.data)  # type: ignore[union-attr]
            else:
                self._execute(cmd)
        self._wrote = True  # (`wrote`, inline)
        if writes.unsent >= TRANSMIT_EARLY:
            self._transmit_now()
        else:
            self.transmit_soon()  # (once per turn however often asked)

    def flush_if_any(self) -> None:
        """After an application call that usually writes nothing (a drop, closing an ended receiver): as `flush`
        when the engine has commands; otherwise only pump its events, and schedule no transmit.

        A transmit scheduled for nothing is not only wasted work: queued ahead of a task that a packet read in
        the same loop turn wakes, it sends that packet's consequences (a control stream's ChannelControl)
        before the task's answer, in a packet of their own."""
        engine = self.engine
        if engine is None:
            return
        commands = engine.commands()
        if not commands:
            self.pump()
            return
        for cmd in commands:
            self._execute(cmd)
        self.wrote()

    def wrote(self) -> None:
        """Writes are with `writes` (flush's): transmit at the turn's end, or now."""
        self._wrote = True
        if self.writes.unsent >= TRANSMIT_EARLY:
            self._transmit_now()
        else:
            self.transmit_soon()

    def _transmit_now(self) -> None:
        """Transmit at once (a pending end-of-turn transmit is dropped: this one replaces it)."""
        self.cancel_transmit_soon()
        self.transmit()

    def flush_soon(self) -> None:
        """After an application call that wrote nothing backpressure must see at once (a take: credit, acks):
        leave the engine's commands to the pump and transmit at the end of this loop turn."""
        if self.engine is not None:
            self.transmit_soon()

    def datagram_received(self, data: bytes | str, addr: Any) -> None:
        """A packet: process it now (in a server's burst: when it ends, burst.py), transmit at the end of the turn,
        after the tasks it woke, so their answers share packets with aioquic's ACKs (no extra packet or wake-up).
        A connection whose idle timeout passed drops it and ends (`end_if_idle`, decision QUIC-34)."""
        now = self.loop.time()
        if self.end_if_idle(now):
            return
        self.quic.receive_datagram(data, addr, now=now)  # type: ignore[arg-type]
        self._unreachable = 0
        if (burst := self.burst) is not None and burst.open:
            burst.joined[self] = None
            return
        if self._drain_sock is not None:  # a client reads the rest of a burst now too (drain.py)
            drain(self._drain_sock, self._receive_more, self.error_received)
        self.end_burst()

    def end_burst(self) -> None:
        """Handle the events of the datagrams received (a burst's, or one) and transmit at the end of the turn.
        Never raises (nor does `_process_events`): a failure closes this connection and leaves the burst's others."""
        self.process_events()
        self.transmit_soon()

    def _receive_more(self, data: bytes, addr: Any) -> None:
        self.quic.receive_datagram(data, addr, now=self.loop.time())

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        # only a client owns its socket; a server connection shares the server's (limits.py drains that)
        self._drain_sock = drainable_socket(transport) if self.side is Side.CLIENT else None

    def transmit(self) -> None:
        """Pump the engine, send what aioquic has ready; senders waiting on its datagram queue may proceed.

        When the application wrote, or the engine did while handling what arrived (a server's headers, a
        control stream's first frame, a CloseReceiver), the first packet carries any ACK aioquic holds back
        (its delay is 1 ms): in a request/response exchange the answer then acknowledges the request, and no
        ACK-only packet, nor the timer wake-up that sends it, follows a millisecond later."""
        wrote = self._wrote or self.writes.unsent > 0  # (the engine's writes since the last transmit)
        self.writes.unsent = 0
        self.pump()
        self.writes.write_held()
        if wrote or self.writes.unsent:
            self._wrote = False
            self.quic.ack_now(self.loop.time())
        self.send_packets()
        if self._writers:
            self._wake_writers()

    def _execute(self, cmd: tp.TransportCommand) -> None:
        """Run one engine command on aioquic; writes join per stream (writes.py), held until any other command
        and each transmit."""
        if type(cmd) is tp.SendStreamData:
            self.writes.stream(cmd.stream_id, cmd.data, cmd.end_stream)
            return
        if type(cmd) is tp.SendDatagram:  # (one per unreliable message)
            self.writes.datagram(cmd.data)
            return
        self.writes.write_held()
        quic = self.quic
        try:
            if type(cmd) is tp.GrantCredit:
                quic.grant(cmd.stream_id, cmd.nbytes)
            elif type(cmd) is tp.ResetStream:
                quic.reset_stream(cmd.stream_id, cmd.error_code)
            elif type(cmd) is tp.StopSending:
                quic.stop_stream(cmd.stream_id, cmd.error_code)
            elif type(cmd) is tp.CloseConnection:
                self.close_connection(cmd.error_code, cmd.reason)
        except (ValueError, AssertionError) as exc:
            # The stream is already gone at the QUIC level (e.g. the peer reset it): nothing to write to.
            log.debug("dropped %s: %s", type(cmd).__name__, exc)

    def close_connection(self, error_code: int, reason: str) -> None:
        """Close the QUIC connection with an application error code."""
        self.writes.write_held()
        self._closing_locally = True
        self.quic.close(error_code=error_code, reason_phrase=reason)
        self.transmit_soon()

    # ---- timers ----
    def _arm_engine_timer(self) -> None:
        assert self.engine is not None
        deadline = self.engine.next_deadline()
        if deadline == self._engine_timer_at:
            return
        if self._engine_timer is not None:
            self._engine_timer.cancel()
            self._engine_timer = None
        self._engine_timer_at = deadline
        if deadline is not None and not self.terminated.done():
            self._engine_timer = self.loop.call_at(deadline, self._on_engine_timer, context=self.own_context)

    def _on_engine_timer(self) -> None:
        self._engine_timer = None
        self._engine_timer_at = None
        if self.engine is not None:
            try:
                self.engine.handle_timer(self.loop.time())
                self.flush()
            except Exception as exc:
                self._internal_error(exc)

    def _arm_keepalive(self) -> None:  # the client's job: its PINGs reset both ends' idle timers
        interval = self.settings.keepalive
        if interval is not None and self.side is Side.CLIENT:
            self._keepalive = self.loop.call_later(interval, self._on_keepalive, context=self.own_context)

    def _on_keepalive(self) -> None:
        if self.terminated.done():
            return
        self.quic.send_ping(0)
        self.transmit()
        self._arm_keepalive()

    # ---- backpressure (the figures are writes.py's) ----
    async def wait_writable(self, stream_id: int | None) -> None:
        """Wait until `send_blocked(stream_id)` is false; ConnectionLost if the connection ends first."""
        await self.wait_while(lambda: self.send_blocked(stream_id))

    async def wait_while(self, blocked: Callable[[], bool]) -> None:
        """Wait until `blocked()` is false (re-checked as acks arrive); ConnectionLost if the connection ends."""
        while blocked():
            if self.terminated.done():
                raise ConnectionLost("connection lost while waiting to send")
            fut = self.loop.create_future()
            self._writers.append((blocked, fut))
            await fut

    def _wake_writers(self) -> None:
        if not self._writers:
            return
        keep = []
        dead = self.terminated.done()
        for blocked, fut in self._writers:
            if fut.done():
                continue
            if dead or not blocked():
                fut.set_result(None)
            else:
                keep.append((blocked, fut))
        self._writers = keep

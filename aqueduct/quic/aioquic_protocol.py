"""aioquic's asyncio protocol with its private state behind named members: the door `protocol.py` goes through.

aioquic's `QuicConnectionProtocol` keeps what an adapter must drive in private attributes and methods: the
connection (`_quic`), the loop (`_loop`), the datagram transport (`_transport`), the end-of-turn transmit
(`_transmit_task`, `_transmit_soon`), its loop timer (`_timer`, `_timer_at`, `_handle_timer`) and the
dispatch of the connection's events (`_process_events`). `AioquicProtocol` is the one class that touches
them; the adapter (`protocol.py` and its `endings.py`) subclasses it and uses only the names below, so an
aioquic upgrade that renames them breaks here (tests/architecture/test_aioquic_stays_in_quic.py lists the
door modules and fails on a private name anywhere else).

- `quic`, `loop`: the paced connection (aioquic's server builds plain QuicConnections: re-classed, see
  aioquic_connection.py) and the loop, as plain attributes (read on every packet).
- `transport` / `use_transport`: the datagram transport aioquic sends on (a client's is wrapped, endpoint.py).
- `transmit_soon`, `cancel_transmit_soon`: aioquic's one end-of-turn transmit.
- `own_context`: the context that transmit and every loop timer of the connection run in (the adapter's
  engine timer and keepalive too): its own, not the scheduling code's (decision SVC-12).
- `send_packets`: aioquic's transmit without its timer churn: its deadline moves on nearly every packet
  (loss detection, ACK delay), mostly later, and aioquic cancels and makes a loop timer each time. A timer
  already armed no later than the new deadline is kept; when it fires early, `_handle_timer` arms the
  current deadline instead.
- `end_if_idle`: aioquic looks at its idle deadline only when its timer runs, and restarts the idle timer on
  every packet received and on the first ack-eliciting one sent after a receipt. When the event loop was held
  up past the deadline (a blocking call, a frozen process), whatever runs first after it (an overdue keep-alive
  PING, an application's send, a packet read) would revive a connection the peer has silently closed at that
  deadline, and a request on it would wait for its own timeout. So before sending (`send_packets`) and before
  handing aioquic a datagram (protocol.py), an expired deadline ends the connection as its timer would have
  (decision QUIC-34).
- `process_events` (aioquic calls it after each datagram and timer; the adapter overrides it) and
  `dispatch_events` (aioquic's own dispatch of what is queued: connection IDs, waiters, then
  `quic_event_received`, bound to aioquic's method without a call between); `pending_events` is the
  connection's queue of them (a live view).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque
from typing import Any

from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.quic import events as qe
from aioquic.quic.connection import QuicConnection

from .aioquic_connection import PacedQuicConnection


class AioquicProtocol(QuicConnectionProtocol):
    """aioquic's QuicConnectionProtocol driven through named members (see the module comment)."""

    def __init__(self, quic: QuicConnection, stream_handler: Any = None) -> None:
        if type(quic) is QuicConnection:
            # aioquic's QuicServer builds plain QuicConnections; ours only adds methods, so re-class it.
            PacedQuicConnection.adopt(quic)
        super().__init__(quic, stream_handler)
        assert isinstance(quic, PacedQuicConnection)
        self.quic: PacedQuicConnection = quic
        """The paced aioquic connection."""
        self.loop: asyncio.AbstractEventLoop = self._loop
        self.pending_events: deque[qe.QuicEvent] = quic._events
        """The connection's queue of events not yet dispatched (a live view)."""
        self._timer_armed = 0.0
        """The deadline aioquic's loop timer was armed for (`send_packets`)."""
        self.own_context = contextvars.Context()
        """The context the connection's own callbacks run in (its end-of-turn transmit, its timers): an empty one
        of its own, never that of the code whose write scheduled them. A served call's was carried on (the
        transmit it scheduled armed the timer, which re-armed itself, and a timer cancelled for an earlier
        deadline stays in the loop's heap with its context until its own), and with it the call's
        `current_call()`, arguments included: a capability passed to the call outlived it."""

    # ---- the transport ----
    @property
    def transport(self) -> asyncio.DatagramTransport | None:
        """The datagram transport packets go out on (None before the endpoint is made)."""
        return self._transport

    def use_transport(self, transport: asyncio.DatagramTransport) -> None:
        """Send on `transport` from now on."""
        self._transport = transport

    # ---- the end-of-turn transmit ----
    def transmit_soon(self) -> None:
        """Transmit at the end of this loop turn (once, however often asked)."""
        if self._transmit_task is None:
            self._transmit_task = self._loop.call_soon(self.transmit, context=self.own_context)

    def cancel_transmit_soon(self) -> None:
        """Drop the end-of-turn transmit (one now replaces it)."""
        task = self._transmit_task
        if task is not None:
            task.cancel()
            self._transmit_task = None

    def send_packets(self) -> None:
        """Send what aioquic has ready, re-arm its timer (lazily, see the module comment); the end-of-turn
        transmit, if any, is done. A connection whose idle timeout passed sends nothing: it ends (`end_if_idle`)."""
        self._transmit_task = None
        quic, now = self.quic, self._loop.time()
        if self.end_if_idle(now):
            return
        send = self._transport.sendto  # type: ignore[union-attr]
        for data, addr in quic.datagrams_to_send(now=now):
            send(data, addr)
        timer_at = quic.get_timer()
        handle = self._timer
        if handle is not None:
            if timer_at is not None and self._timer_armed <= timer_at:
                self._timer_at = timer_at
                return
            handle.cancel()
            self._timer = None
        if timer_at is not None:
            self._timer = self._loop.call_at(timer_at, self._handle_timer, context=self.own_context)
            self._timer_armed = timer_at  # (uvloop's handle for a past deadline has no `when()`)
        self._timer_at = timer_at

    def end_if_idle(self, now: float) -> bool:
        """Whether the connection's idle timeout has passed with its timer not yet run (`quic.idle_expired(now)`:
        the loop was held up past it); if so the connection ends now, as that timer would have, before anything
        is sent or received on it (a packet either way restarts aioquic's idle timer, reviving a connection the
        peer has silently closed): decision QUIC-34."""
        if not self.quic.idle_expired(now):
            return False
        handle = self._timer
        if handle is not None:
            handle.cancel()
            self._timer = None
        self._timer_at = None
        self.quic.handle_timer(now=now)  # (aioquic's idle timeout: ConnectionTerminated queued, nothing sent)
        self._process_events()
        return True

    def _handle_timer(self) -> None:
        """aioquic's timer fired: run it, or, fired for a deadline since moved later, arm that one instead."""
        timer_at = self._timer_at
        if self._timer is not None and timer_at is not None and self._timer_armed < timer_at:
            self._timer = self._loop.call_at(timer_at, self._handle_timer, context=self.own_context)
            self._timer_armed = timer_at
            return
        super()._handle_timer()

    # ---- events ----
    def _process_events(self) -> None:
        """aioquic's hook after each datagram and timer: the adapter's `process_events` (which subclasses, the
        adapter's and WebTransport's, override; the adapter's own datagram path calls it directly)."""
        self.process_events()

    def process_events(self) -> None:
        """Handle the connection's queued events (aioquic calls this after each datagram and timer)."""
        self.dispatch_events()

    dispatch_events = QuicConnectionProtocol._process_events
    """aioquic's own dispatch of the queued events (connection IDs, waiters, then `quic_event_received`)."""

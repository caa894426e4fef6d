"""The sans-I/O Aqueduct connection engine for one side: the facade.

Spec: the whole protocol, through the parts below; this module implements
none of it itself.

Inputs: `handle_event(transport_event, now)`, `handle_timer(now)`, and the
application calls (`send`, `finish`, `cancel`, `close_receiver`,
`take_message`, `drop_sender`, `drop_receiver`, `close`). Outputs:
`commands()` drains transport commands, `events()` drains application
events, `next_deadline()` says when `handle_timer` must be called next.

The engine routes events to parts that each own one concern and are the
only writers of their fields, and collects what they emit in one Outbox:

  context.py    side, config, clock, RTT, closed; the Outbox and the Timers
  startup.py    Startup: headers, the server's gates, 0-RTT, the entrypoint
  incoming.py   Incoming: stream roles, frame placement, routing
  intake.py     Intake: a Message received, queued for the application
  receiving.py  Receivers: the receivers' life (control stream, acks, close)
  sending.py    Senders: the senders' life (writes, finish, cancel, reports)
  loss.py       Loss: what reachability and cascading loss do to halves
  creation.py   CreationLinks: the creation links (reachability and cascade walks)
  flow.py       Flow: stream credit, partial frames, stalled streams
  halves.py     Halves: the halves by handle and by channel, ghost filters
  streams.py    StreamTable: the stream records and our stream writes
  sender.py, receiver.py, acks.py: the per-channel records, their state
                tables, and the ack/nack ledgers

Protocol errors raised anywhere below become one CloseConnection here;
application misuse raises the aqueduct.errors types. Illegal state moves
raise IllegalTransition (transitions.py).

Events name only handles the application has been given ("exposed"): a
half that arrives inside a queued message is exposed when that message is
taken, and any state it reached before (queued messages, its end) is
reported then.

Additions to the original contract: `receiver_status`, `sender_status`,
`state_sizes`, `now`, `send_many` (a batch of messages without
attachments: `send` is a batch of one, and both take one path,
Senders.send; a message with attachments mints its channels first,
Senders.send_attached) and `take_many`. Each direction has one path: every send
goes through Senders.send, every Message received through Intake.receive;
the per-message cost stays low because a batch is checked once and, in the
steady state, written as one command (tests/core/test_hot_paths.py holds
them to the general procedure). Each send is one SendStreamData (or one
datagram per message); joining the writes of a loop turn is the adapter's.
Transport notes: a ResetStream or GrantCredit may name
a stream the transport already finished (ignore it); the engine never emits
StopSending and ignores StopSendingReceived (the transport resets the
stream itself). WritableAgain is never emitted: sends never wait in the
engine (the adapter applies stream backpressure using SendResult.stream_id).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

from mypy_extensions import mypyc_attr

from ..errors import ChannelClosed, EndReason
from ..wire.channel_id import Side
from ..wire.errors import ProtocolError
from ..wire.headers import Headers, normalize_headers
from .app import AppEvent, AttachKind, ConnectionClosed, Delivered, Delivery, ReceiverHandle, SenderHandle, SendResult
from .config import EngineConfig
from .context import Context
from .creation import CreationLinks
from .flow import Flow
from .halves import Halves
from .incoming import Incoming
from .intake import Intake
from .loss import Loss
from .receiver import ReceiverRecord, RState
from .receiving import Receivers
from .sender import SenderRecord, SState
from .sending import Senders
from .startup import Startup
from .streams import StreamTable
from .timers import ACKS, PARTIAL_FRAME, SENT_UNRELIABLE, Timers
from .transport import (
    CloseConnection,
    ConnectionTerminated,
    DatagramReceived,
    StreamDataReceived,
    TransportCommand,
    TransportEvent,
)

_UNRELIABLE = Delivery.UNRELIABLE


@mypyc_attr(allow_interpreted_subclasses=True)  # compiled (aqueduct/native.py), still open to subclasses
class Engine:
    """One side of an Aqueduct connection, as a deterministic state machine."""

    def __init__(
        self,
        side: Side,
        *,
        headers: Iterable[tuple[str, bytes]] = (),
        config: EngineConfig | None = None,
        now: float = 0.0,
    ) -> None:
        """A client starts sending its Version + ConnectionControl at once; a server waits for them."""
        self._side = side
        self.config = config or EngineConfig()
        ctx = self._ctx = Context(side, self.config, now)
        self._out = ctx.out
        self._timers: Timers = ctx.timers
        self._admitted = False  # data events may skip Startup.admit (see handle_event)
        streams = self._streams = StreamTable(ctx)
        halves = self._halves = Halves(self.config)
        self._senders: dict[int, SenderRecord] = halves.senders
        self._receivers: dict[int, ReceiverRecord] = halves.receivers
        self._links = CreationLinks()
        self._flow = Flow(ctx, streams, halves.receivers)
        self._tx = Senders(ctx, streams, halves, self._links)
        self._rx = Receivers(ctx, streams, halves, self._tx, self._flow)
        self._intake = Intake(ctx, halves, self._rx, self._tx)
        self._loss = Loss(side, streams, halves, self._tx, self._rx)
        self._startup = Startup(ctx, streams, halves, self._rx, normalize_headers(headers))
        parts = (self._startup, self._intake, self._tx, self._rx, self._loss)
        self._in = Incoming(ctx, streams, halves, self._flow, parts)
        self._startup.bind(self._in.dispatch)
        self._on_stream_data = self._in.on_stream_data
        self._on_datagram = self._in.on_datagram
        self._resume_stalled = self._in.resume_stalled
        self._resume = self._flow.resume

    # ---- identity ----
    @property
    def side(self) -> Side:
        """Client or server."""
        return self._side

    @property
    def entrypoint(self) -> SenderHandle | ReceiverHandle | None:
        """Client: the entrypoint sender (from the start). Server: the entrypoint receiver, once headers came."""
        return self._startup.entrypoint

    @property
    def peer_headers(self) -> Headers | None:
        """The peer's connection headers, once received."""
        return self._startup.peer_headers

    @property
    def now(self) -> float:
        """The latest time the engine was given."""
        return self._ctx.now

    @property
    def rtt(self) -> float:
        """The RTT estimate in use (seconds)."""
        return self._ctx.rtt

    @property
    def closed(self) -> bool:
        """Whether the connection is over."""
        return self._ctx.closed

    # ---- transport side ----
    def handle_event(self, event: TransportEvent, now: float) -> None:
        """Process one transport event. Protocol errors become a CloseConnection command, never an exception."""
        if now > self._ctx.now:
            self._ctx.now = now
        kind = type(event)
        if self._admitted and (kind is StreamDataReceived or kind is DatagramReceived):
            # the hot path: what Startup.admit would dispatch at once
            try:
                if kind is StreamDataReceived:
                    self._on_stream_data(event)  # type: ignore[arg-type]
                else:
                    self._on_datagram(event.data)  # type: ignore[union-attr]
                if self._resume:
                    self._resume_stalled()
            except ProtocolError as err:
                self._fail(err)
            return
        if self._ctx.closed:
            return
        if isinstance(event, ConnectionTerminated):
            self._teardown(event.error_code, event.reason, by_peer=event.by_peer, send_close=False)
            return
        try:
            self._startup.admit(event)
            self._resume_stalled()
        except ProtocolError as err:
            self._fail(err)
        self._admitted = not self._ctx.closed and self._startup.passing  # once true, only the teardown ends it

    def accept_peer(self, now: float | None = None) -> None:
        """Server with `hold_until_accepted`: the application accepted the client (its headers came): reply,
        create the entrypoint receiver and process what was held. No-op if already accepted or closed."""
        self._tick(now)
        if self._ctx.closed:
            return
        try:
            self._startup.accept()
            self._resume_stalled()
        except ProtocolError as err:
            self._fail(err)
        self._admitted = not self._ctx.closed and self._startup.passing

    def handle_timer(self, now: float) -> None:
        """Run whatever is due at `now` (acks, SentUnreliable, nacks)."""
        self._ctx.now = max(self._ctx.now, now)
        if self._ctx.closed:
            return
        try:
            for key in self._timers.due(self._ctx.now):
                assert isinstance(key, tuple)
                kind, handle = key
                if kind == SENT_UNRELIABLE:
                    self._tx.sent_unreliable_due(handle)
                elif kind == PARTIAL_FRAME:
                    self._flow.partial_due(handle)
                else:
                    assert kind == ACKS
                    self._rx.due(handle)
                if self._ctx.closed:
                    return
            self._resume_stalled()
        except ProtocolError as err:
            self._fail(err)

    def next_deadline(self) -> float | None:
        """When `handle_timer` must next run, or None."""
        return None if self._ctx.closed else self._timers.next()

    def update_rtt(self, rtt: float) -> None:
        """The transport's smoothed RTT estimate, in seconds."""
        if rtt > 0:
            self._ctx.rtt = rtt

    def commands(self) -> list[TransportCommand]:
        """Drain the transport commands produced so far, in order (first the first frames still owed on control
        streams the peer opened: `StreamTable.owe_first`)."""
        if self._streams.owed:
            self._streams.flush_owed()
        return self._out.take_commands()

    def events(self) -> list[AppEvent]:
        """Drain the application events produced so far, in order."""
        return self._out.take_events()

    # ---- application side ----
    def send(
        self,
        sender: SenderHandle,
        payload: bytes | bytearray | memoryview,
        attach: Sequence[AttachKind] = (),
        delivery: Delivery = Delivery.ORDERED,
        now: float | None = None,
    ) -> SendResult:
        """Send a message, creating one new channel per attachment (`send_many` of one message, and its result).

        Raises ChannelClosed/ChannelLost/... if the sender has ended,
        LimitExceeded for a payload over the frame limit, an unreliable message
        over the datagram limit, or too many channels.
        """
        s = self._sender_at(sender, now)
        if type(payload) is not bytes:
            payload = bytes(payload)
        if attach:
            return SendResult(*self._tx.send_attached(s, payload, attach, delivery))
        number = s.next_unrel if delivery is _UNRELIABLE else s.next_rel
        return SendResult(number, (), self._tx.send(s, (payload,), delivery))

    def send_many(
        self, sender: SenderHandle, payloads: Sequence[bytes | bytearray | memoryview],
        delivery: Delivery = Delivery.ORDERED, now: float | None = None,
    ) -> int | None:
        """Send messages without attachments, in order, as `send` would one by one (its errors, raised before
        any is sent; a oneshot sender takes one); return the stream written (None: datagrams). An ordered batch
        is one write."""
        s = self._sender_at(sender, now)
        if len(payloads) == 1:
            if type(payloads[0]) is not bytes:
                payloads = (bytes(payloads[0]),)
        elif any(type(p) is not bytes for p in payloads):
            payloads = [bytes(p) for p in payloads]
        return self._tx.send(s, cast("Sequence[bytes]", payloads), delivery)  # (each one bytes by now)

    def finish(self, sender: SenderHandle, now: float | None = None) -> None:
        """Gracefully finish a channel (SentUnreliable if due, FinishSender, FIN) once its control stream exists."""
        self._tick(now)
        self._tx.finish(self._tx.app_sender(sender))

    def cancel(self, sender: SenderHandle, now: float | None = None) -> None:
        """Abruptly cancel a channel: reset its streams with 'cancelled'.

        Raises ChannelClosed if the channel already finished; no-op if it already ended otherwise.
        """
        self._tick(now)
        s = self._tx.app_sender(sender)
        if s.state in (SState.FINISH_WAIT, SState.FINISHED):
            raise ChannelClosed("the channel was already finished")
        self._tx.cancel(s)

    def close_receiver(self, receiver: ReceiverHandle, now: float | None = None) -> None:
        """Close a receiver now (final acks/nacks, CloseReceiver, FIN once the control stream exists).

        Messages not yet taken are discarded; ReceiverEnded(CLOSED) follows once the close is sent.
        """
        self._tick(now)
        r = self._rx.app_receiver(receiver)
        if r.state is not RState.GONE:
            self._rx.close(r, EndReason.CLOSED)
        self._run_resumed()

    def take_message(self, receiver: ReceiverHandle, now: float | None = None) -> Delivered | None:
        """Take the next queued message, or None if empty (check `receiver_status` for the end)."""
        if now is not None and now > self._ctx.now:
            self._ctx.now = now
        taken = self._rx.take(self._rx.app_receiver(receiver))
        if self._resume:
            self._run_resumed()
        return taken

    def take_many(self, receiver: ReceiverHandle, limit: int, now: float | None = None) -> list[Delivered]:
        """Take up to `limit` queued messages at once (what `limit` calls of `take_message` would return)."""
        self._tick(now)
        out = self._rx.take_many(self._rx.app_receiver(receiver), limit)
        self._run_resumed()
        return out

    def refuse(self, receiver: ReceiverHandle, refused: Sequence[Delivered], now: float | None = None) -> None:
        """With EngineConfig.ack_on_take: the application refused these messages, just taken (before anything
        else reached the engine): their acks are not owed, and the receiver's close nacks them (unless
        `accept_refused` comes first). Without it, or once the receiver ended: nothing to do."""
        self._tick(now)
        self._rx.refuse(self._rx.app_receiver(receiver), refused)

    def accept_refused(self, receiver: ReceiverHandle, now: float | None = None) -> None:
        """The application read on past the messages it refused: they are acked after all (the wire cannot nack
        one reliable message and keep its channel)."""
        self._tick(now)
        self._rx.accept_refused(self._rx.app_receiver(receiver))

    def drop_sender(self, sender: SenderHandle, now: float | None = None) -> None:
        """The application let go of a sender handle: cancel it unless already finished."""
        self._tick(now)
        self._tx.drop(sender)

    def drop_receiver(self, receiver: ReceiverHandle, now: float | None = None) -> None:
        """The application let go of a receiver handle: close it."""
        self._tick(now)
        self._rx.drop(receiver)
        self._run_resumed()

    def close(self, error_code: int = 0, reason: str = "", now: float | None = None) -> None:
        """Close the whole connection."""
        self._tick(now)
        self._teardown(error_code, reason, by_peer=False, send_close=True)

    # ---- additions: status and introspection ----
    def sender_status(self, handle: SenderHandle) -> EndReason | None:
        """None while the sender is alive, else why it ended (as reported by SenderEnded)."""
        return self._tx.status(handle)

    def receiver_status(self, handle: ReceiverHandle) -> EndReason | None:
        """None while the receiver is alive, else why it ended (as reported by ReceiverEnded)."""
        return self._rx.status(handle)

    def channel_of(self, handle: int) -> int | None:
        """The channel ID of a sender or receiver handle (None once the engine forgot it)."""
        half = self._senders.get(handle) or self._receivers.get(handle)
        return None if half is None else int(half.channel)

    def live_halves(self) -> tuple[int, int]:
        """(senders, receivers) that have not ended; ended halves the application still holds do not count."""
        return (sum(not s.end_reported for s in self._senders.values()),
                sum(not r.end_reported for r in self._receivers.values()))

    def state_sizes(self) -> dict[str, int]:
        """Sizes of every table, for leak checks: all near zero once quiescent with every handle dropped.

        The connection control stream stays in `streams`, and the peer's headers in `peer_header_bytes`, for the
        connection's life.
        """
        return {
            "senders": len(self._senders),
            "receivers": len(self._receivers),
            "links": len(self._links),
            "timers": len(self._timers),
            "streams": len(self._streams),
            "pending_receivers": len(self._halves.unclaimed),
            "held_bytes": self._startup.held_bytes + self._flow.partial_bytes,
            "channel_map": len(self._halves.tx_of) + len(self._halves.rx_of),
            "stalled_streams": self._flow.stalled_streams(),
            "ack_ranges": sum(r.acks.ranges_held() for r in self._receivers.values() if r.acks is not None)
            + sum(s.acks.ranges_held() for s in self._senders.values() if s.acks is not None),
            "partial_frames": len(self._flow.partial_since),
            "peer_header_bytes": self._startup.peer_header_bytes,
            "queued_halves": sum(r.queue.halves for r in self._receivers.values() if r.queue is not None),
        }

    # ---- internals ----
    def _run_resumed(self) -> None:
        """After an application call made room in a queue: let stalled streams run (errors close)."""
        if self._resume and not self._ctx.closed:
            try:
                self._resume_stalled()
            except ProtocolError as err:
                self._fail(err)

    def _tick(self, now: float | None) -> None:
        if now is not None and now > self._ctx.now:
            self._ctx.now = now

    def _sender_at(self, sender: SenderHandle, now: float | None) -> SenderRecord:
        """The clock moved to `now`, and the application's open sender `sender` (the send paths' one lookup:
        a live sender costs a dict read; anything else goes through `app_sender`, which raises why)."""
        if now is not None and now > self._ctx.now:
            self._ctx.now = now
        s = self._senders.get(sender)
        if s is None or s.app_dropped or self._ctx.closed:
            s = self._tx.app_sender(sender)
        return s

    def _fail(self, err: ProtocolError) -> None:
        """A protocol error: close the connection with its code."""
        self._teardown(int(err.code), err.reason, by_peer=False, send_close=True)

    def _teardown(self, code: int, reason: str, *, by_peer: bool, send_close: bool) -> None:
        if self._ctx.closed:
            return
        self._ctx.closed = True
        self._admitted = False
        if send_close:
            self._out.command(CloseConnection(code, reason))
        self._tx.teardown()
        self._rx.teardown()
        self._streams.clear()
        self._halves.clear_live()
        self._links.clear()
        self._timers.clear()
        self._startup.clear()
        self._flow.clear()
        self._out.event(ConnectionClosed(code, reason, by_peer))


__all__ = ["Engine"]

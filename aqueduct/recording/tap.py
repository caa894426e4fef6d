"""ConnectionTap: what the API layer calls to record one connection's traffic.

The API layer owns a tap per connection (`Recorder.connection(...)`) and
reports, as they happen: messages it sends and takes (`sent`, `received`),
channel halves coming into being (`created`), and the engine's application
events through `app_event(event, channel_of)`, which maps handles to channel
ids and turns acks, nacks and ends into rows (table `_EVENT_HANDLERS`). The
tap remembers each message's send time until its ack or nack, to record the
outcome's latency; that memory is capped at `max_pending` (oldest dropped).
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from ..core.app import (
    AppEvent,
    ConnectionClosed,
    Delivery,
    MessagesAcked,
    MessagesNacked,
    ReceiverEnded,
    SenderEnded,
)
from ..errors import EndReason
from .schema import COLUMNS, END_KIND, IN, OUT, RELIABLE, Kind, Row

_now = time.time_ns
_HOST = socket.gethostname()
_SENT = Kind.MESSAGE_SENT.value
_RECEIVED = Kind.MESSAGE_RECEIVED.value
_RELIABLE = RELIABLE
_UNRELIABLE = Delivery.UNRELIABLE
_ACKED = Kind.ACKED.value
_NACKED = Kind.NACKED.value
_EMPTY: tuple[int, ...] = ()

class RowSink(Protocol):
    """Where a tap's rows go (a Recorder): the tap knows it by this much, so tap.py needs no recorder.py."""

    payloads: bool
    """Whether payloads are stored."""
    payload_limit: int
    """With `payloads`: the largest payload stored."""

    def record(self, row: Row) -> None:
        """Take one row."""


ChannelOf = Callable[[int], "int | None"]
"""Maps an engine handle to its channel id (None when unknown)."""


class ConnectionTap:
    """Records one connection's events into a Recorder."""

    def __init__(
        self,
        recorder: RowSink,
        side: str,
        peer: str = "",
        connection_id: str | None = None,
        max_pending: int = 1 << 20,
        link: str | None = None,
    ) -> None:
        """Records `connection_opened` with `side` and `peer` in its detail, `link` (the identity both sides of
        the connection share, if known) and this host's name."""
        self.recorder = recorder
        self.id = connection_id or uuid.uuid4().hex[:16]
        self.max_pending = max_pending
        self._record = recorder.record
        self._cap = recorder.payload_limit if recorder.payloads else -1
        """Largest payload stored; -1 (none) without payloads."""
        self._pending: dict[tuple[int, bool, int], tuple[int, str]] = {}
        self._record((_now(), Kind.CONNECTION_OPENED.value, self.id, *_tail(
            detail=f"{side} {peer}".strip(), link=link, host=_HOST)))  # fmt: skip

    # ---- messages (hot path) ----
    def sent(
        self,
        channel: int,
        number: int,
        delivery: Delivery,
        payload: bytes,
        attachments: Sequence[int] = _EMPTY,
    ) -> None:
        """This side sent message `number` on `channel`; `attachments` are the channel ids it carries."""
        now = _now()
        mode = delivery.value
        self._record(
            (now, _SENT, self.id, channel, OUT, mode, number, len(payload), attachments,
             payload if len(payload) <= self._cap else None, None, None, None, None, None, None, None, None, None)
        )  # fmt: skip
        pending = self._pending
        pending[(channel, delivery is not Delivery.UNRELIABLE, number)] = (now, mode)
        if len(pending) > self.max_pending:
            del pending[next(iter(pending))]

    def received(
        self,
        channel: int,
        number: int,
        delivery: Delivery,
        payload: bytes,
        attachments: Sequence[int] = _EMPTY,
    ) -> None:
        """This side took message `number` from `channel`.

        The wire does not tell ordered from unordered stream messages, so a reliable message is recorded with
        delivery `reliable` (the sending side's rows, and the paired view, say which it was).
        """
        self._record(
            (_now(), _RECEIVED, self.id, channel, IN, _UNRELIABLE.value if delivery is _UNRELIABLE else _RELIABLE,
             number, len(payload), attachments,
             payload if len(payload) <= self._cap else None, None, None, None, None, None, None, None, None, None)
        )  # fmt: skip

    # ---- outcomes ----
    def acked(self, channel: int, reliable: bool, first: int, stop: int) -> None:
        """Messages `first`..`stop`-1 of `channel`'s reliable or unreliable space were acked."""
        self._outcome(_ACKED, channel, reliable, first, stop)

    def nacked(self, channel: int, reliable: bool, first: int, stop: int) -> None:
        """Messages `first`..`stop`-1 of `channel`'s reliable or unreliable space were lost."""
        self._outcome(_NACKED, channel, reliable, first, stop)

    def _outcome(self, kind: str, channel: int, reliable: bool, first: int, stop: int) -> None:
        now = _now()
        pop = self._pending.pop
        record = self._record
        fallback = (None, None if reliable else Delivery.UNRELIABLE.value)
        for number in range(first, stop):
            sent_ns, mode = pop((channel, reliable, number), fallback)
            latency = None if sent_ns is None else now - sent_ns
            record(
                (now, kind, self.id, channel, OUT, mode, number, None, None, None, latency,
                 None, None, None, None, None, None, None, None)
            )  # fmt: skip

    # ---- channels ----
    def created(self, channel: int, outgoing: bool, parent: int | None = None) -> None:
        """A channel half now exists here: `outgoing` if we hold its sender; `parent` carried it, if any."""
        self._record((_now(), Kind.CHANNEL_CREATED.value, self.id, *_tail(
            channel=channel, direction=OUT if outgoing else IN, parent=parent)))  # fmt: skip

    def ended(self, channel: int, outgoing: bool, reason: EndReason) -> None:
        """A channel half ended: `outgoing` for our sender, else our receiver."""
        self._record((_now(), END_KIND[reason].value, self.id, *_tail(
            channel=channel, direction=OUT if outgoing else IN, detail=reason.value)))  # fmt: skip
        if outgoing and reason is not EndReason.FINISHED:
            for key in [k for k in self._pending if k[0] == channel]:
                del self._pending[key]

    # ---- connection ----
    def stats(
        self, rtt_s: float | None, cwnd: int | None, bytes_in_flight: int | None, packets_lost: int | None
    ) -> None:
        """A periodic sample of the QUIC connection's state."""
        self._record((_now(), Kind.CONNECTION_STATS.value, self.id, *_tail(
            rtt_us=None if rtt_s is None else rtt_s * 1e6, cwnd=cwnd, bytes_in_flight=bytes_in_flight,
            packets_lost=packets_lost)))  # fmt: skip

    def closed(self, error_code: int, reason: str = "", by_peer: bool = False) -> None:
        """The connection is over."""
        self._record((_now(), Kind.CONNECTION_CLOSED.value, self.id, *_tail(
            number=error_code, detail=f"{'peer' if by_peer else 'local'}: {reason}")))  # fmt: skip
        self._pending.clear()

    def app_event(self, event: AppEvent, channel_of: ChannelOf) -> None:
        """Record an engine application event; `channel_of` maps its handle to a channel id."""
        handler = _EVENT_HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event, channel_of)


def _tail(**fields: object) -> tuple[object, ...]:
    """The columns after (time_ns, kind, connection), from keywords."""
    return tuple(fields.get(name) for name in COLUMNS[3:])


def _on_acked(tap: ConnectionTap, ev: MessagesAcked, channel_of: ChannelOf) -> None:
    channel = channel_of(ev.sender)
    if channel is not None:
        tap.acked(channel, ev.reliable, ev.first, ev.stop)


def _on_nacked(tap: ConnectionTap, ev: MessagesNacked, channel_of: ChannelOf) -> None:
    channel = channel_of(ev.sender)
    if channel is not None:
        tap.nacked(channel, ev.reliable, ev.first, ev.stop)


def _on_sender_ended(tap: ConnectionTap, ev: SenderEnded, channel_of: ChannelOf) -> None:
    channel = channel_of(ev.sender)
    if channel is not None:
        tap.ended(channel, True, ev.reason)


def _on_receiver_ended(tap: ConnectionTap, ev: ReceiverEnded, channel_of: ChannelOf) -> None:
    channel = channel_of(ev.receiver)
    if channel is not None:
        tap.ended(channel, False, ev.reason)


def _on_closed(tap: ConnectionTap, ev: ConnectionClosed, channel_of: ChannelOf) -> None:
    tap.closed(ev.error_code, ev.reason, ev.by_peer)


_EVENT_HANDLERS: dict[type, Callable[[ConnectionTap, object, ChannelOf], None]] = {
    MessagesAcked: _on_acked,  # type: ignore[dict-item]
    MessagesNacked: _on_nacked,  # type: ignore[dict-item]
    SenderEnded: _on_sender_ended,  # type: ignore[dict-item]
    ReceiverEnded: _on_receiver_ended,  # type: ignore[dict-item]
    ConnectionClosed: _on_closed,  # type: ignore[dict-item]
}

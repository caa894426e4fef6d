"""CONTRACT STUB -- the engine helper replaces the bodies (signatures are the contract).

The sans-I/O Aqueduct connection engine for one side.

Inputs: `handle_event(transport_event, now)`, `handle_timer(now)`, and the
application calls (`send`, `finish`, `cancel`, `close_receiver`,
`take_message`, `drop_sender`, `drop_receiver`). Outputs: `commands()`
drains transport commands, `events()` drains application events,
`next_deadline()` says when `handle_timer` must be called next.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..wire.channel_id import Side
from ..wire.headers import Headers
from .app import AppEvent, AttachKind, Delivered, Delivery, ReceiverHandle, SenderHandle, SendResult
from .config import EngineConfig
from .transport import TransportCommand, TransportEvent


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
        raise NotImplementedError

    # ---- identity ----
    @property
    def side(self) -> Side:
        """Client or server."""
        raise NotImplementedError

    @property
    def entrypoint(self) -> SenderHandle | ReceiverHandle | None:
        """Client: the entrypoint sender (from the start). Server: the entrypoint receiver, once headers came."""
        raise NotImplementedError

    @property
    def peer_headers(self) -> Headers | None:
        """The peer's connection headers, once received."""
        raise NotImplementedError

    @property
    def closed(self) -> bool:
        """Whether the connection is over."""
        raise NotImplementedError

    # ---- transport side ----
    def handle_event(self, event: TransportEvent, now: float) -> None:
        """Process one transport event. Protocol errors become a CloseConnection command, never an exception."""
        raise NotImplementedError

    def handle_timer(self, now: float) -> None:
        """Run whatever is due at `now` (acks, SentUnreliable, nacks)."""
        raise NotImplementedError

    def next_deadline(self) -> float | None:
        """When `handle_timer` must next run, or None."""
        raise NotImplementedError

    def update_rtt(self, rtt: float) -> None:
        """The transport's smoothed RTT estimate, in seconds."""
        raise NotImplementedError

    def commands(self) -> list[TransportCommand]:
        """Drain the transport commands produced so far, in order."""
        raise NotImplementedError

    def events(self) -> list[AppEvent]:
        """Drain the application events produced so far, in order."""
        raise NotImplementedError

    # ---- application side ----
    def send(
        self,
        sender: SenderHandle,
        payload: bytes,
        attach: Sequence[AttachKind] = (),
        delivery: Delivery = Delivery.ORDERED,
        now: float | None = None,
    ) -> SendResult:
        """Send a message, creating one new channel per attachment.

        Raises ChannelClosed/ChannelLost/... if the sender has ended,
        LimitExceeded for a payload over the frame limit, an unreliable message
        over the datagram limit, or too many channels.
        """
        raise NotImplementedError

    def finish(self, sender: SenderHandle, now: float | None = None) -> None:
        """Gracefully finish a channel (SentUnreliable if due, FinishSender, FIN) once its control stream exists."""
        raise NotImplementedError

    def cancel(self, sender: SenderHandle, now: float | None = None) -> None:
        """Abruptly cancel a channel: reset its streams with 'cancelled'."""
        raise NotImplementedError

    def close_receiver(self, receiver: ReceiverHandle, now: float | None = None) -> None:
        """Close a receiver now (final acks/nacks, CloseReceiver, FIN once the control stream exists)."""
        raise NotImplementedError

    def take_message(self, receiver: ReceiverHandle, now: float | None = None) -> Delivered | None:
        """Take the next queued message, or None if empty (check `receiver_state` for the end)."""
        raise NotImplementedError

    def drop_sender(self, sender: SenderHandle, now: float | None = None) -> None:
        """The application let go of a sender handle: cancel it unless already finished."""
        raise NotImplementedError

    def drop_receiver(self, receiver: ReceiverHandle, now: float | None = None) -> None:
        """The application let go of a receiver handle: close it."""
        raise NotImplementedError

    def close(self, error_code: int = 0, reason: str = "", now: float | None = None) -> None:
        """Close the whole connection."""
        raise NotImplementedError

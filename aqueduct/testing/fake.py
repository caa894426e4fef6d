"""A scriptable stand-in engine with the Engine's transport surface, for testing the simulator itself.

It records every transport event, timer call and RTT update it gets, sends
whatever commands a test queues in `out`, and can echo: stream bytes back on
the same bidirectional stream, and datagrams back as datagrams.
"""

from __future__ import annotations

from ..core.app import AppEvent
from ..core.transport import (
    DatagramReceived,
    SendDatagram,
    SendStreamData,
    StreamDataReceived,
    StreamReset,
    TransportCommand,
    TransportEvent,
    is_bidi,
)


class FakeEngine:
    """Records what the network hands it; sends what the test queues."""

    def __init__(self, *, echo: bool = False) -> None:
        self.echo = echo
        self.received: list[tuple[float, TransportEvent]] = []
        self.timers: list[float] = []
        self.rtts: list[float] = []
        self.deadline: float | None = None
        self.out: list[TransportCommand] = []
        self.app: list[AppEvent] = []

    def handle_event(self, event: TransportEvent, now: float) -> None:
        """Record; echo if asked."""
        self.received.append((now, event))
        if not self.echo:
            return
        if isinstance(event, StreamDataReceived) and is_bidi(event.stream_id):
            self.out.append(SendStreamData(event.stream_id, event.data, event.end_stream))
        elif isinstance(event, DatagramReceived):
            self.out.append(SendDatagram(event.data))

    def handle_timer(self, now: float) -> None:
        """Record the call and clear the deadline."""
        self.timers.append(now)
        self.deadline = None

    def next_deadline(self) -> float | None:
        """Whatever the test set."""
        return self.deadline

    def update_rtt(self, rtt: float) -> None:
        """Record the RTT."""
        self.rtts.append(rtt)

    def commands(self) -> list[TransportCommand]:
        """Hand over the queued commands."""
        out, self.out = self.out, []
        return out

    def events(self) -> list[AppEvent]:
        """Hand over the queued app events."""
        out, self.app = self.app, []
        return out

    # ---- views for assertions ----
    def stream_data(self, stream_id: int) -> bytes:
        """Every byte received on a stream, in arrival order."""
        return b"".join(
            e.data for _, e in self.received if isinstance(e, StreamDataReceived) and e.stream_id == stream_id
        )

    def chunks(self, stream_id: int) -> list[StreamDataReceived]:
        """The data events of one stream."""
        return [e for _, e in self.received if isinstance(e, StreamDataReceived) and e.stream_id == stream_id]

    def resets(self) -> list[StreamReset]:
        """The stream resets received."""
        return [e for _, e in self.received if isinstance(e, StreamReset)]

    def datagrams(self) -> list[bytes]:
        """Datagram payloads in arrival order."""
        return [e.data for _, e in self.received if isinstance(e, DatagramReceived)]

    def of_type(self, kind: type[TransportEvent]) -> list[tuple[float, TransportEvent]]:
        """Received events of one type, with their times."""
        return [(t, e) for t, e in self.received if isinstance(e, kind)]

"""What a connection's link tells its observers: the recording (`record=`) and the metrics.

Both are protocols, so the API does not depend on the layers above it that
implement them (aqueduct/recording/hook.py's ConnectionRecording,
aqueduct/metrics.py's Metrics): the link calls them, they register
themselves on the link (`ConnectionLink.recording`, `.metrics`).
"""

from __future__ import annotations

from typing import Protocol

from ..core import app
from ..core.app import Delivery


class EventObserver(Protocol):
    """What `ConnectionLink.metrics` must be (aqueduct.metrics.Metrics is one): told of every engine event batch."""

    def on_events(self, events: list[app.AppEvent]) -> None: ...


class Recording(Protocol):
    """What `ConnectionLink.recording` must be (aqueduct.recording.hook.ConnectionRecording is one): told of every
    event batch, send, take and drop. A protocol, so the API does not depend on the recording layer above it."""

    def on_events(self, events: list[app.AppEvent]) -> None:
        """A batch of engine application events."""

    def on_sent(self, handle: int, payload: bytes, delivery: Delivery, result: app.SendResult) -> None:
        """The engine accepted a message on sender `handle`."""

    def on_received(self, delivered: app.Delivered) -> None:
        """The application took a message."""

    def on_dropped(self, handle: int, receiver: bool) -> None:
        """The application dropped a half (before the engine hears of it)."""

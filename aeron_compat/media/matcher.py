# Matching publications to subscriptions.  Each publication log offers a set of keys (where its
# frames go: ('ipc',), ('ep', endpoint), ('ctl', control endpoint), ('resp', correlation id)) and
# each subscription has one key (where it listens).  Whenever either side is added, or a manual
# destination changes, every pair with the same stream id, a shared key and a passing session
# filter gets one Image: the subscription's view of that session, joining at the log's tail.
"""`Matcher`: links publication logs to subscriptions in one matching domain."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..client.image import Image
from ..client.publication import PublicationLog

Key = tuple[Any, ...]


class Subscriber(Protocol):
    """A local Subscription, or a remote one known through a link."""

    stream_id: int
    session_filter: int | None
    is_closed: bool
    _images: tuple[Image, ...]

    def _sinks_from(self, log: PublicationLog) -> list[Any]:
        """Sinks this subscriber already has for `log`."""

    def _attach(self, log: PublicationLog) -> None:
        """Start receiving `log` (creates a sink and adds it to the log)."""


class Matcher:
    """Publications and subscriptions of one domain (a driver's ipc, or the loopback network)."""

    def __init__(self) -> None:
        self.logs: list[tuple[PublicationLog, set[Key]]] = []
        self.subs: list[tuple[Subscriber, Key]] = []

    def add_log(self, log: PublicationLog, keys: set[Key]) -> None:
        """Register a log and link it to matching subscriptions."""
        self.logs.append((log, keys))
        for sub, key in list(self.subs):
            self._link(log, keys, sub, key)

    def set_keys(self, log: PublicationLog, keys: set[Key]) -> None:
        """Change a log's keys (manual destinations): links new matches; the caller drops old ones."""
        self.logs = [(lg, keys if lg is log else k) for lg, k in self.logs]
        for sub, key in list(self.subs):
            self._link(log, keys, sub, key)

    def remove_log(self, log: PublicationLog) -> None:
        """Forget a log."""
        self.logs = [(lg, k) for lg, k in self.logs if lg is not log]

    def add_subscription(self, sub: Subscriber, key: Key) -> None:
        """Register a subscription and link it to matching logs."""
        self.subs.append((sub, key))
        for log, keys in list(self.logs):
            self._link(log, keys, sub, key)

    def remove_subscription(self, sub: Subscriber) -> None:
        """Forget a subscription."""
        self.subs = [(s, k) for s, k in self.subs if s is not sub]

    def sinks_of(self, log: PublicationLog, keep: Callable[[Key], bool]) -> list[Any]:
        """Sinks fed by `log` in subscriptions whose key fails `keep`."""
        out: list[Any] = []
        for sub, key in self.subs:
            if not keep(key):
                out.extend(sub._sinks_from(log))
        return out

    @staticmethod
    def _link(log: PublicationLog, keys: set[Key], sub: Subscriber, key: Key) -> None:
        if log.closed or sub.is_closed or log.stream_id != sub.stream_id or key not in keys:
            return
        if sub.session_filter is not None and sub.session_filter != log.session_id:
            return
        if not sub._sinks_from(log):
            sub._attach(log)

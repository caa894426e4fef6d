# Matching publications to subscriptions.  Each publication log offers a set of keys (where its
# frames go: ('ipc',), ('ep', endpoint), ('ctl', control endpoint), ('resp', correlation id)) and
# each subscription has one key (where it listens).  Whenever either side is added, or a manual
# destination changes, every pair with the same stream id, a shared key and a passing session
# filter gets one Image: the subscription's view of that session, joining at the log's tail.
"""`Matcher`: links publication logs to subscriptions in one matching domain."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from .image import Image
from .publication import PublicationLog
from .subscription import Subscription

Key = tuple[Any, ...]
_correlation_ids = itertools.count(1)


def next_correlation_id() -> int:
    """Process-wide unique id for images and registrations."""
    return next(_correlation_ids)


class Matcher:
    """Publications and subscriptions of one domain (a driver's ipc, or the loopback network)."""

    def __init__(self) -> None:
        self.logs: list[tuple[PublicationLog, set[Key]]] = []
        self.subs: list[tuple[Subscription, Key]] = []

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

    def add_subscription(self, sub: Subscription, key: Key) -> None:
        """Register a subscription and link it to matching logs."""
        self.subs.append((sub, key))
        for log, keys in list(self.logs):
            self._link(log, keys, sub, key)

    def remove_subscription(self, sub: Subscription) -> None:
        """Forget a subscription."""
        self.subs = [(s, k) for s, k in self.subs if s is not sub]

    def find_image(self, correlation_id: int) -> Image | None:
        """The image with `correlation_id` among this domain's subscriptions."""
        for sub, _ in self.subs:
            for image in sub._images:
                if image.correlation_id == correlation_id:
                    return image
        return None

    def images_of(self, log: PublicationLog, keep: Callable[[Key], bool]) -> list[Image]:
        """Images fed by `log` in subscriptions whose key fails `keep`."""
        out: list[Image] = []
        for sub, key in self.subs:
            if not keep(key):
                out.extend(i for i in sub._images if i._source is log)
        return out

    @staticmethod
    def _link(log: PublicationLog, keys: set[Key], sub: Subscription, key: Key) -> None:
        if log.closed or sub.is_closed or log.stream_id != sub.stream_id or key not in keys:
            return
        if sub.session_filter is not None and sub.session_filter != log.session_id:
            return
        if any(i._source is log for i in sub._images):
            return
        with log.lock:
            image = Image(sub, log.session_id, log.initial_term_id, log.term_length, log.appender.tail,
                          log.source_identity, next_correlation_id(), log, log.response_correlation_id)
            log.add_sink(image)
        sub._add_image(image)

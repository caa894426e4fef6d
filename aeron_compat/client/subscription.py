# A Subscription collects the images of every publication session that matches its channel and
# stream (and session-id filter, if any).  Image arrivals and departures are queued by whoever
# causes them (a local publication, or the driver's network task) and the available/unavailable
# handlers run on the subscriber's own thread, at the start and end of poll()/controlled_poll()
# and when `images` is read: callbacks never race the user's loop.  poll() shares the fragment
# limit across images, starting at a rotating image so no session starves.
"""`Subscription`: where images of matching publications are polled."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .counters import Counters
from .ids import next_correlation_id
from .image import ControlledFragmentHandler, FragmentHandler, Image
from .uri import ChannelUri

if TYPE_CHECKING:
    from .publication import PublicationLog

ImageHandler = Callable[[Image], object]


class SubscriptionOwner(Protocol):
    """The driver a subscription belongs to: an embedded MediaDriver, or the proxy of a standalone one
    (which also has a `pump` method, called at each poll to read its socket)."""

    counters: Counters

    def remove_subscription(self, sub: Subscription) -> None:
        """Forget `sub`."""


class Subscription:
    """Polls the images of matching publications; not thread safe (one polling thread)."""

    def __init__(self, driver: SubscriptionOwner, channel: ChannelUri, channel_str: str, stream_id: int,
                 registration_id: int, on_available_image: ImageHandler | None,
                 on_unavailable_image: ImageHandler | None) -> None:
        self.driver = driver
        self.channel_uri = channel
        self.channel = channel_str
        self.stream_id = stream_id
        self.registration_id = registration_id
        session = channel.get("session-id")
        self.session_filter = None if session is None else int(session)
        self.resolved_endpoint: str | None = None
        self._on_available = on_available_image
        self._on_unavailable = on_unavailable_image
        self._images: tuple[Image, ...] = ()
        self._events: deque[tuple[bool, Image]] = deque()
        self._round_robin = 0
        self._lock = threading.Lock()
        self._pump = getattr(driver, "pump", None)  # a standalone driver's proxy reads its socket here
        self._counts = driver.counters.shard()  # images counters under _lock; bytes_received by the poller
        self.is_closed = False

    # --- driven by the sources ---------------------------------------------------------------------
    def _sinks_from(self, log: PublicationLog) -> list[Image]:
        return [i for i in self._images if i._source is log]

    def _attach(self, log: PublicationLog) -> None:
        with log.lock:
            image = Image(self, log.session_id, log.initial_term_id, log.term_length, log.appender.tail,
                          log.source_identity, next_correlation_id(), log, log.response_correlation_id)
            log.add_sink(image)
        self._add_image(image)

    def _add_image(self, image: Image) -> None:
        with self._lock:
            self._images = (*self._images, image)
            self._counts["images"] += 1
            self._counts["images_total"] += 1
            self._events.append((True, image))

    def _image_closed(self, image: Image) -> None:
        with self._lock:
            if image in self._images:
                self._images = tuple(i for i in self._images if i is not image)
                self._counts["images"] -= 1
                self._counts["unavailable_images"] += 1
                self._events.append((False, image))

    def _dispatch(self) -> None:
        events = self._events
        while events:
            available, image = events.popleft()
            handler = self._on_available if available else self._on_unavailable
            if handler is not None:
                handler(image)

    # --- polling ---------------------------------------------------------------------------------
    def poll(self, handler: FragmentHandler, fragment_limit: int) -> int:
        """Give up to `fragment_limit` fragments from all images to `handler(buffer, header)`."""
        return self._poll_images(Image.poll, handler, fragment_limit)

    def controlled_poll(self, handler: ControlledFragmentHandler, fragment_limit: int) -> int:
        """Like poll, with the handler returning an `Action` (ABORT, BREAK, COMMIT, CONTINUE)."""
        return self._poll_images(Image.controlled_poll, handler, fragment_limit)

    def _poll_images(self, poll_image: Callable[[Image, Any, int], int], handler: Any, fragment_limit: int) -> int:
        if self._pump is not None:
            self._pump()
        if self._events:
            self._dispatch()
        images = self._images
        count = 0
        if images:
            n = len(images)
            start = self._round_robin % n
            self._round_robin = start + 1
            for i in range(n):
                count += poll_image(images[(start + i) % n], handler, fragment_limit - count)
                if count >= fragment_limit:
                    break
        if self._events:
            self._dispatch()
        return count

    # --- state -----------------------------------------------------------------------------------
    @property
    def images(self) -> list[Image]:
        """Current images (runs pending image handlers first)."""
        if self._events:
            self._dispatch()
        return list(self._images)

    @property
    def image_count(self) -> int:
        """Number of current images."""
        return len(self._images)

    def image_by_session_id(self, session_id: int) -> Image | None:
        """The image of `session_id`, if present."""
        for image in self._images:
            if image.session_id == session_id:
                return image
        return None

    @property
    def is_connected(self) -> bool:
        """At least one image is present."""
        return any(not i.is_closed for i in self._images)

    def do_work(self) -> int:
        """Run pending image handlers without polling data; returns how many ran."""
        n = len(self._events)
        self._dispatch()
        return n

    def close(self) -> None:
        """Stop receiving: images close (their sources stop counting them); no handlers run after this."""
        if self.is_closed:
            return
        self.is_closed = True
        self.driver.remove_subscription(self)
        with self._lock:
            images, self._images = self._images, ()
            self._counts["images"] -= len(images)
        for image in images:
            image.close()
        self.driver.counters.retire(self._counts)
        self._events.clear()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Subscription(channel={self.channel!r}, stream_id={self.stream_id}, images={len(self._images)})"

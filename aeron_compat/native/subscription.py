"""`NativeSubscription` and `NativeImage`: Aeron subscriptions on the native UDP transport.

Theory: a subscription wraps a sans-I/O `Receiver` hosted on the UDP socket of
its endpoint in a `NativeDriver` thread, which feeds it datagrams and timer
ticks. `poll` runs on the caller's thread under the host lock (handlers run
inside it). Image arrivals and departures are queued by the driver and their
handlers run inside `poll` / `images` on the polling thread, as in the rest of
aeron_compat.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from aeron_compat.native.channel import Address, NativeChannel
from aeron_compat.native.driver import Host, NativeDriver, default_driver
from aeron_compat.native.image import FragmentHandler, Image, ImageConfig
from aeron_compat.native.publisher_config import DestinationMode
from aeron_compat.native.receiver import Receiver, ReceiverConfig


class NativeImage:
    """One publisher session seen by a native subscription."""

    def __init__(self, subscription: NativeSubscription, image: Image) -> None:
        self.subscription = subscription
        self._image = image

    @property
    def session_id(self) -> int:
        """Session id."""
        return self._image.session_id

    @property
    def source_identity(self) -> str:
        """`ip:port` the session's data comes from."""
        return f"{self._image.source[0]}:{self._image.source[1]}"

    @property
    def join_position(self) -> int:
        """Position at which this subscription joined the stream."""
        return self._image.join_position

    @property
    def position(self) -> int:
        """Subscriber position."""
        return self._image.subscriber_position

    @property
    def initial_term_id(self) -> int:
        """The stream's initial term id."""
        return self._image.log.initial_term_id

    @property
    def term_buffer_length(self) -> int:
        """Term length."""
        return self._image.log.term_length

    @property
    def is_end_of_stream(self) -> bool:
        """Whether the publisher ended the stream and everything was consumed."""
        return self._image.end_of_stream

    @property
    def is_closed(self) -> bool:
        """Whether the image ended (end of stream or liveness timeout)."""
        return self._image.end_of_stream or self._image.closed

    @property
    def rtt_ns(self) -> int | None:
        """RTT to the sender, after `NativeSubscription.probe_rtt`."""
        return self._image.last_rtt_ns

    def poll(self, handler: FragmentHandler, fragment_limit: int = 10) -> int:
        """Deliver this image's fragments only."""
        return self.subscription._poll_image(self._image, handler, fragment_limit, False)

    def controlled_poll(self, handler: FragmentHandler, fragment_limit: int = 10) -> int:
        """Controlled poll of this image only."""
        return self.subscription._poll_image(self._image, handler, fragment_limit, True)

    def __repr__(self) -> str:
        return f"NativeImage(session_id={self.session_id}, source={self.source_identity}, position={self.position})"


ImageHandler = Callable[[NativeImage], object]


class NativeSubscription:
    """An Aeron subscription receiving the real wire protocol at its `endpoint`."""

    def __init__(self, channel: str, stream_id: int, driver: NativeDriver | None = None,
                 on_available_image: ImageHandler | None = None, on_unavailable_image: ImageHandler | None = None,
                 **image_config: Any) -> None:
        ch = NativeChannel.parse(channel)
        if ch.endpoint is None:
            raise ValueError("endpoint: a subscription needs an endpoint to listen on")
        self.channel = channel
        self.stream_id = stream_id
        self.driver = driver or default_driver()
        image_config.setdefault("receiver_id", random.getrandbits(63))
        config = ReceiverConfig(stream_id=stream_id, session_id=ch.session_id,
                                control=ch.control if ch.mode is DestinationMode.DYNAMIC else None,
                                image=ImageConfig(**image_config))
        self._rec = Receiver(config, time.monotonic_ns())
        self._host = Host(self.driver, self._rec)
        self._on_available = on_available_image
        self._on_unavailable = on_unavailable_image
        self._images: dict[Image, NativeImage] = {}
        self.driver.open(self._host, ch.endpoint)
        self.is_closed = False

    def _dispatch(self) -> None:
        with self._host.lock:
            arrived, self._rec.available = self._rec.available, []
            left, self._rec.unavailable = self._rec.unavailable, []
        for image in arrived:
            wrapper = self._images[image] = NativeImage(self, image)
            if self._on_available is not None:
                self._on_available(wrapper)
        for image in left:
            gone = self._images.pop(image, None) or NativeImage(self, image)
            if self._on_unavailable is not None:
                self._on_unavailable(gone)

    def poll(self, handler: FragmentHandler, fragment_limit: int = 10) -> int:
        """Deliver up to `fragment_limit` fragments from all images (handler runs under the driver lock)."""
        return self._poll(handler, fragment_limit, False)

    def controlled_poll(self, handler: FragmentHandler, fragment_limit: int = 10) -> int:
        """`poll` whose handler returns an `Action` (ABORT redelivers the fragment next time, BREAK stops)."""
        return self._poll(handler, fragment_limit, True)

    def _poll(self, handler: FragmentHandler, fragment_limit: int, controlled: bool) -> int:
        self._dispatch()
        with self._host.lock:
            count = self._rec.poll(handler, fragment_limit, time.monotonic_ns(), controlled)
            pending = bool(self._rec.outbox)
        if pending:
            self._host.kick()
        self._dispatch()
        return count

    def _poll_image(self, image: Image, handler: FragmentHandler, fragment_limit: int, controlled: bool) -> int:
        with self._host.lock:
            poll = image.controlled_poll if controlled else image.poll
            count = poll(handler, fragment_limit, time.monotonic_ns())
            self._rec.collect()
        self._host.kick()
        return count

    def probe_rtt(self) -> None:
        """Send RTTM probes to every image's sender (`NativeImage.rtt_ns` gets the answer)."""
        with self._host.lock:
            self._rec.probe_rtt(time.monotonic_ns())
        self._host.kick()

    @property
    def images(self) -> list[NativeImage]:
        """Current images."""
        self._dispatch()
        return list(self._images.values())

    @property
    def image_count(self) -> int:
        """Number of current images."""
        return len(self.images)

    def image_by_session_id(self, session_id: int) -> NativeImage | None:
        """The image of `session_id`, if any."""
        return next((i for i in self.images if i.session_id == session_id), None)

    @property
    def is_connected(self) -> bool:
        """Whether any image is present."""
        return bool(self.images)

    @property
    def local_address(self) -> Address:
        """The bound endpoint."""
        return self._host.local_address

    def close(self) -> None:
        """Stop receiving and release the socket."""
        if not self.is_closed:
            self.is_closed = True
            self.driver.run(self._host.close_now)

    def __enter__(self) -> NativeSubscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

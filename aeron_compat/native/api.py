"""Publications and subscriptions on the native Aeron UDP transport, with aeron_compat's method names.

Theory: `NativePublication` wraps a `Publisher`, `NativeSubscription` a
`Receiver`, each hosted on one UDP socket of a `NativeDriver` thread. `offer`
and `poll` run on the caller's thread under the host lock and never block;
`offer` also sends what flow control allows straight away (one datagram per
offer when the window is open, as Aeron's sender does per duty cycle), and the
driver thread does receiving, timers and sending that waits on the window. Image arrivals and
departures are queued by the driver and their handlers run inside `poll` /
`images` on the polling thread, as in the rest of aeron_compat.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from aeron_compat.codes import DEFAULT_MTU, DEFAULT_TERM_LENGTH, PublicationResult
from aeron_compat.native.channel import Address, NativeChannel
from aeron_compat.native.driver import Host, NativeDriver, default_driver
from aeron_compat.native.image import FragmentHandler, Image, ImageConfig
from aeron_compat.native.publisher import DestinationMode, Publisher, PublisherConfig
from aeron_compat.native.receiver import Receiver, ReceiverConfig

ANY: Address = ("0.0.0.0", 0)


def _random_int32() -> int:
    return random.randint(-(2**31), 2**31 - 1)


class NativePublication:
    """An Aeron network publication speaking the real wire protocol (unicast or multi-destination-cast)."""

    exclusive = True

    def __init__(self, channel: str, stream_id: int, driver: NativeDriver | None = None, **config: Any) -> None:
        ch = NativeChannel.parse(channel)
        self.channel = channel
        self.driver = driver or default_driver()
        if ch.linger_ns is not None:
            config.setdefault("linger_ns", ch.linger_ns)
        cfg = PublisherConfig(
            session_id=ch.session_id if ch.session_id is not None else _random_int32(),
            stream_id=stream_id,
            initial_term_id=ch.init_term_id if ch.init_term_id is not None else _random_int32(),
            term_length=ch.term_length or DEFAULT_TERM_LENGTH,
            mtu=ch.mtu or DEFAULT_MTU,
            mode=ch.mode,
            **config,
        )
        self._pub = Publisher(cfg, time.monotonic_ns())
        if ch.mode is DestinationMode.UNICAST:
            if ch.endpoint is None:
                raise ValueError("endpoint: a unicast publication needs an endpoint")
            self._pub.add_destination(ch.endpoint)
            bind = ANY
        else:
            assert ch.control is not None
            bind = ch.control
        self._host = Host(self.driver, self._pub, on_kick=self._pub.send)
        self._host.after_tick = self._pub.is_finished
        self.driver.open(self._host, bind)

    def offer(self, data: bytes | bytearray | memoryview, offset: int = 0, length: int | None = None) -> int:
        """Append a message: the new position (> 0) or a `PublicationResult` code (< 0)."""
        view = memoryview(data)
        if offset or length is not None:
            view = view[offset : len(view) if length is None else offset + length]
        pub = self._pub
        with self._host.lock:
            now = time.monotonic_ns()
            result = pub.offer(view, now)
            if result > 0:  # send from this thread as flow control allows: no hop to the driver thread
                pub.send(now)
                self._host.send_now_locked()
                return result
        return PublicationResult(result)

    def try_claim(self, length: int) -> NativeBufferClaim:
        """Claim `length` bytes (at most `max_payload_length`) to fill in place; use as a context manager."""
        with self._host.lock:
            result = self._pub.claim(length, time.monotonic_ns())
        if result < 0:
            return NativeBufferClaim(self, PublicationResult(result), -1, 0)
        return NativeBufferClaim(self, result + ((length + 63) & ~31), result, length)

    def _finish_claim(self, claim: NativeBufferClaim, commit: bool) -> None:
        with self._host.lock:
            if commit:
                self._pub.commit_claim(claim.start, claim.buffer, claim.reserved_value)
                now = time.monotonic_ns()
                self._pub.send(now)
                self._host.send_now_locked()
            else:
                self._pub.abort_claim(claim.start, claim.length)
        self._host.kick()

    def add_destination(self, endpoint_channel: str) -> None:
        """Manual MDC: also send to the endpoint of `endpoint_channel` (`aeron:udp?endpoint=h:p`)."""
        with self._host.lock:
            self._pub.add_destination(_endpoint_of(endpoint_channel))
        self._host.kick()

    def remove_destination(self, endpoint_channel: str) -> None:
        """Manual MDC: stop sending to that endpoint."""
        with self._host.lock:
            self._pub.remove_destination(_endpoint_of(endpoint_channel))

    def probe_rtt(self) -> None:
        """Ask the receivers to echo an RTTM; `rtt_ns` holds the answer."""
        with self._host.lock:
            self._pub.probe_rtt(time.monotonic_ns())
        self._host.kick()

    @property
    def rtt_ns(self) -> int | None:
        """The last RTT measured with `probe_rtt`."""
        return self._pub.last_rtt_ns

    @property
    def stream_id(self) -> int:
        """Stream id."""
        return self._pub.config.stream_id

    @property
    def session_id(self) -> int:
        """Session id."""
        return self._pub.config.session_id

    @property
    def initial_term_id(self) -> int:
        """Initial term id (random unless `init-term-id` was given)."""
        return self._pub.config.initial_term_id

    @property
    def term_buffer_length(self) -> int:
        """Term length."""
        return self._pub.config.term_length

    @property
    def mtu(self) -> int:
        """MTU."""
        return self._pub.config.mtu

    @property
    def max_payload_length(self) -> int:
        """Largest payload of one fragment."""
        return self._pub.max_payload_length

    @property
    def max_message_length(self) -> int:
        """Largest message."""
        return self._pub.max_message_length

    @property
    def position(self) -> int:
        """Position after the last offered message."""
        return self._pub.position

    @property
    def position_limit(self) -> int:
        """Offers at or beyond this position are back pressured."""
        return self._pub.position_limit

    @property
    def is_connected(self) -> bool:
        """Whether a receiver's status messages are current."""
        return self._pub.is_connected(time.monotonic_ns())

    @property
    def is_closed(self) -> bool:
        """Whether `close` was called."""
        return self._pub.is_closed

    @property
    def destinations(self) -> list[str]:
        """Where data currently goes, as `host:port`."""
        return [f"{h}:{p}" for h, p in self._pub.destinations]

    @property
    def local_address(self) -> Address:
        """The bound UDP address (control address for MDC)."""
        return self._host.local_address

    def close(self) -> None:
        """End of stream: EOS heartbeats until receivers confirm or the linger time passes."""
        with self._host.lock:
            self._pub.close(time.monotonic_ns())
        self._host.kick()

    def __enter__(self) -> NativePublication:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NativeBufferClaim:
    """Space claimed by `try_claim`: fill `buffer`, then commit (or abort); commits on normal exit of `with`.

    A failed claim is falsy and `result` holds the code; a successful one holds the new position.
    """

    def __init__(self, publication: NativePublication, result: int, start: int, length: int) -> None:
        self._publication = publication
        self.result = result
        self.position = max(result, 0)
        self.start = start
        self.buffer = memoryview(bytearray(length))
        self.reserved_value = 0
        self.is_open = result > 0
        self.committed: bool | None = None

    def __bool__(self) -> bool:
        return self.result > 0

    @property
    def length(self) -> int:
        """Claimed payload length."""
        return len(self.buffer)

    def put_bytes(self, data: bytes, offset: int = 0) -> None:
        """Copy `data` into the claimed buffer at `offset`."""
        self.buffer[offset : offset + len(data)] = data

    def commit(self) -> None:
        """Publish the claimed frame."""
        self._finish(True)

    def abort(self) -> None:
        """Give the space up: it becomes padding that receivers skip."""
        self._finish(False)

    def _finish(self, commit: bool) -> None:
        if self.is_open:
            self.is_open = False
            self.committed = commit
            self._publication._finish_claim(self, commit)

    def __enter__(self) -> NativeBufferClaim:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._finish(exc_type is None)


def _endpoint_of(endpoint_channel: str) -> Address:
    ch = NativeChannel.parse(endpoint_channel)
    if ch.endpoint is None:
        raise ValueError(f"endpoint: missing in {endpoint_channel!r}")
    return ch.endpoint


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


"""`NativePublication`: an Aeron publication on the native UDP transport, with aeron_compat's method names.

Theory: it wraps a sans-I/O `Publisher` hosted on one UDP socket of a
`NativeDriver` thread. `offer` and `try_claim` run on the caller's thread
under the host lock and never block; `offer` also sends what flow control
allows straight away (one datagram per offer when the window is open, as
Aeron's sender does per duty cycle), and the driver thread does receiving,
timers and the sending that waits on the window.
"""

from __future__ import annotations

import random
import time
from typing import Any

from aeron_compat.client.claim import ClaimBase
from aeron_compat.client.codes import DEFAULT_MTU, DEFAULT_TERM_LENGTH, PublicationResult
from aeron_compat.native.channel import Address, NativeChannel
from aeron_compat.native.driver import Host, NativeDriver, default_driver
from aeron_compat.native.publisher import Publisher
from aeron_compat.native.publisher_config import DestinationMode, PublisherConfig

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


class NativeBufferClaim(ClaimBase):
    """Space claimed by `try_claim`: fill `buffer`, then commit (or abort); commits on normal exit of `with`.

    A failed claim is falsy and `result` holds the code; a successful one holds the new position.
    """

    def __init__(self, publication: NativePublication, result: int, start: int, length: int) -> None:
        super().__init__(result, max(result, 0), length)
        self._publication = publication
        self.start = start

    def _settle(self, commit: bool) -> None:
        self.committed = commit
        self._publication._finish_claim(self, commit)


def _endpoint_of(endpoint_channel: str) -> Address:
    ch = NativeChannel.parse(endpoint_channel)
    if ch.endpoint is None:
        raise ValueError(f"endpoint: missing in {endpoint_channel!r}")
    return ch.endpoint

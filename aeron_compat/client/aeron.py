# The client object.  `Aeron.connect(ctx)` embeds a MediaDriver unless the context names one or asks
# for the standalone driver (`driver_mode`: then a DriverProxy stands in for the driver); the
# client remembers what it created and closes it all (and the driver or connection it owns) on
# close(), so it is a context manager like Aeron's AutoCloseable client.
"""`Aeron`: the client API (add publications and subscriptions)."""

from __future__ import annotations

from typing import Any

from ..driver.media_driver import MediaDriver
from ..driver.proxy import DriverProxy
from ..native.hookup import is_native, native_publication, native_subscription
from .codes import RegistrationError
from .context import Context, Driver
from .publication import ExclusivePublication, Publication
from .subscription import ImageHandler, Subscription


class Aeron:
    """Entry point: `with Aeron.connect(Context()) as aeron: pub = aeron.add_publication(...)`."""

    def __init__(self, ctx: Context | None = None) -> None:
        self.ctx = ctx or Context()
        self._owns_driver = self.ctx.driver is None
        self.driver: Driver = self.ctx.driver or _launch(self.ctx)
        self._resources: list[Publication | Subscription] = []
        self.is_closed = False

    @classmethod
    def connect(cls, ctx: Context | None = None) -> Aeron:
        """Connect to (by default: embed) a media driver."""
        return cls(ctx)

    def add_publication(self, channel: str, stream_id: int) -> Publication:
        """A concurrent publication (shares the session with others on the same channel and stream)."""
        if is_native(channel):  # Aeron's own UDP protocol: aeron_compat.native
            return native_publication(channel, stream_id, self._resources, Publication)
        log = self.driver.add_publication(channel, stream_id, exclusive=False)
        pub = Publication(log, log.registration_id)
        self._resources.append(pub)
        return pub

    def add_exclusive_publication(self, channel: str, stream_id: int) -> ExclusivePublication:
        """A publication with its own session."""
        if is_native(channel):
            return native_publication(channel, stream_id, self._resources, ExclusivePublication)
        log = self.driver.add_publication(channel, stream_id, exclusive=True)
        pub = ExclusivePublication(log, log.registration_id)
        self._resources.append(pub)
        return pub

    def add_subscription(self, channel: str, stream_id: int, on_available_image: ImageHandler | None = None,
                         on_unavailable_image: ImageHandler | None = None) -> Subscription:
        """A subscription; image handlers run on the polling thread (see Subscription)."""
        if is_native(channel):
            return native_subscription(channel, stream_id, self._resources, Subscription, on_available_image,
                                       on_unavailable_image)
        sub = self.driver.add_subscription(channel, stream_id, on_available_image, on_unavailable_image)
        self._resources.append(sub)
        return sub

    @property
    def counters(self) -> dict[str, int]:
        """The driver's system counters (a copy; the standalone driver's are fetched from it)."""
        return self.driver.counter_values()

    def close(self) -> None:
        """Close everything this client added, and the driver if embedded."""
        if self.is_closed:
            return
        self.is_closed = True
        for resource in reversed(self._resources):
            resource.close()
        if self._owns_driver:
            self.driver.close()

    async def aclose(self) -> None:
        """Close, and wait for an embedded driver's network to finish (async users)."""
        self.close()
        if self._owns_driver:
            await self.driver.aclose()

    def __enter__(self) -> Aeron:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> Aeron:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


def _launch(ctx: Context) -> MediaDriver | DriverProxy:
    if ctx.driver_mode == "standalone":
        return DriverProxy(ctx)
    if ctx.driver_mode == "auto":
        try:
            return DriverProxy(ctx)
        except RegistrationError:
            pass
    return MediaDriver.launch_embedded(ctx)

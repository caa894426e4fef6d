# One Context configures both the client and the embedded driver (Aeron splits them in two; a
# Python process has one driver per client by default, so one object is simpler to port to).
"""`Context`: settings of `Aeron.connect` and its `MediaDriver`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .codes import DEFAULT_MTU, DEFAULT_TERM_LENGTH
from .publication import PublicationLog
from .subscription import ImageHandler, Subscription


class Driver(Protocol):
    """What `Aeron` asks of its driver: an embedded `MediaDriver`, or the proxy of a standalone one."""

    def add_publication(self, channel_str: str, stream_id: int, exclusive: bool) -> PublicationLog:
        """The log a new publication handle appends to."""

    def add_subscription(self, channel_str: str, stream_id: int, on_available: ImageHandler | None,
                         on_unavailable: ImageHandler | None) -> Subscription:
        """A subscription linked to the matching publications."""

    def counter_values(self) -> dict[str, int]:
        """The system counters (a copy)."""

    def close(self) -> None:
        """Close everything the driver holds."""

    async def aclose(self) -> None:
        """`close()`, then wait for its network to finish."""


@dataclass
class Context:
    """Client and driver settings; every field has a working default."""

    aeron_dir: str | Path | None = None
    """Driver directory (counters snapshot); None: a fresh one under `counters.base_dir()`. It must be private to
    this user (or is created so, mode 0700): another user's, or one others may write, raises `UnsafeDirectory`."""
    driver: Driver | None = None
    """Use this running driver (e.g. a `MediaDriver`) instead of embedding a new one."""
    driver_mode: str = "embedded"
    """'embedded' (a MediaDriver in this process), 'standalone' (connect to the `aeron_compat driver` serving
    `aeron_dir`, default `<base dir>/standalone`), or 'auto' (standalone if one serves there, else embedded)."""
    term_length: int = DEFAULT_TERM_LENGTH
    """Term length of publications whose channel has no term-length."""
    mtu: int = DEFAULT_MTU
    """MTU of publications whose channel has no mtu."""
    publication_window: int | None = None
    """Flow-control window in bytes; None: half the term length (as Aeron's IPC publications)."""
    publication_reserved_session_id_low: int = -1
    """With _high, a range the driver never picks session ids from (the application assigns them)."""
    publication_reserved_session_id_high: int = 1000
    """Upper end of the reserved session id range."""
    udp_media: str = "aqueduct"
    """How aeron:udp travels: 'aqueduct' (QUIC, one endpoint per driver) or 'loopback' (drivers of this process)."""
    driver_loop: str = "auto"
    """Where the Aqueduct media runs: 'caller' (the running asyncio loop), 'thread' (a daemon thread's loop),
    or 'auto' (the running loop if there is one, else a thread)."""
    tls_cert: str | Path | None = None
    """Certificate the driver serves with (aqueduct media); None: the user's shared dev certificate."""
    tls_key: str | Path | None = None
    """Key of `tls_cert`."""
    tls_ca: str | Path | None = None
    """CA that remote drivers' certificates must chain to; None: the dev CA."""
    transport_settings: Any = None
    """aqueduct.quic.settings.TransportSettings for the driver's QUIC endpoint (its idle timeout is the
    image liveness timeout); None: Aqueduct's defaults."""
    max_remote_subscriptions_per_link: int = 1024
    """Subscriptions one connected driver may register here (more are refused and counted as errors)."""
    counters_interval: float = 0.25
    """Seconds between counters snapshots written for `aeron_compat stat` (0 disables)."""
    error_handler: Callable[[BaseException], Any] | None = None
    """Called with errors the driver cannot raise to a caller."""

    def conclude(self) -> Context:
        """Validate settings (raises ValueError naming the setting)."""
        if self.term_length & (self.term_length - 1) or self.term_length < 64 * 1024:
            raise ValueError("term_length: must be a power of two >= 64k")
        if self.mtu % 32 or not 64 <= self.mtu <= 65504:
            raise ValueError("mtu: must be a multiple of 32 in [64, 65504]")
        if self.udp_media not in ("loopback", "aqueduct"):
            raise ValueError("udp_media: 'loopback' or 'aqueduct'")
        if self.driver_mode not in ("embedded", "standalone", "auto"):
            raise ValueError("driver_mode: 'embedded', 'standalone' or 'auto'")
        if self.driver_loop not in ("auto", "caller", "thread"):
            raise ValueError("driver_loop: 'auto', 'caller' or 'thread'")
        return self

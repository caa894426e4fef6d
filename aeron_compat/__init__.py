"""aeron_compat: the Aeron programming model, carried by Aqueduct channels.

Port Aeron code by renaming: ``Aeron.connect(Context())``, ``add_publication(channel, stream_id)``,
``add_exclusive_publication``, ``add_subscription(channel, stream_id, on_available_image=...,
on_unavailable_image=...)``, ``Publication.offer`` returning a position or a ``PublicationResult``
code, ``try_claim`` (a ``BufferClaim`` context manager), ``Subscription.poll`` /
``controlled_poll`` with ``Action``, handlers taking ``(memoryview, Header)``, ``FragmentAssembler``,
``Image``, ``ChannelUri`` / ``ChannelUriStringBuilder``.

Streams.  A publication session is a log of terms (``term-length``, a power of two); every frame is
a 32-byte header plus payload aligned to 32 bytes, so positions are Aeron's positions.  Messages
longer than ``mtu - 32`` (MTU default 1408) are split into B..E fragments; a message never
straddles a term: the rest of the term becomes padding and ``offer`` returns ADMIN_ACTION.

Flow control.  A publication's limit is min(subscriber image positions) + window, the window being
half the term length (``Context.publication_window`` overrides).  Past it ``offer`` returns
BACK_PRESSURED; with no image, NOT_CONNECTED.  An image holds at most a window (plus one message) of
frames, so nothing buffers without bound: a subscriber that stops polling stops the publisher.

Mapping onto Aqueduct.  The embedded ``MediaDriver`` is the process's Aqueduct endpoint.
``aeron:ipc`` stays inside the driver: a publication hands its frames straight to the images of
matching subscriptions (in-process queues).  For ``aeron:udp`` a subscription's ``endpoint`` is
where its driver serves; a publication's driver connects there (one QUIC connection per remote
endpoint, shared by every stream) and hands over one Aqueduct channel per (stream id, session id):
an image is the Receiver that arrived attached to that "setup" message, and a Sender attached
beside it carries the image's position back, which is the publication's flow-control window
(so nothing buffers beyond a window, end to end).  ``reliable=false`` sends batches on the
unreliable lane.  Dynamic multi-destination-cast: a subscription with ``control=`` connects to
the publication's control endpoint and registers there; the publication then fans out over
those connections, so a client behind NAT is reached on the connection it opened.  Manual MDC
by ``add_destination`` / ``remove_destination``.  ``control-mode=response`` answers an image on
the connection it came from.  ``Context.udp_media="loopback"`` keeps aeron:udp between the drivers
of one process (same matching, sessions and source identities, no sockets).  See
``media/aqueduct.py`` and ``media/remote.py`` for the control messages.  (``transport=native`` in an
``aeron:udp`` channel selects Aeron's own UDP protocol instead: ``aeron_compat.native``;
``transport=stream`` the same mapping over Marlin Stream instead of Aqueduct: ``media/stream.py``.)

Standalone driver.  ``aeron_compat driver`` runs the driver as a process of its own, serving a
directory (``Context.aeron_dir``; lock, Unix socket, counters); clients choose it with
``Context(driver_mode="standalone")`` (or ``"auto"``).  A client then keeps its publications' logs
and sends their frames to the driver, which owns the ipc matching and the Aqueduct endpoint and
moves image frames to subscriber processes, whose reported positions are the publishers' flow
control: ``aeron:ipc`` crosses processes with the same positions and back pressure.  See
``driver/standalone.py`` and ``driver/proxy.py``.

Poll model.  Aeron's poll is non-blocking and driven by the user's loop, and so is this one:
``offer`` and ``poll`` never block and need no event loop.  The driver's network work runs on an
asyncio loop: the running loop of the code that created the client (async users: poll, then
``await asyncio.sleep(0)``), or else a daemon thread's own loop (sync users: poll loops should
idle, e.g. ``BackoffIdleStrategy``, when a poll finds nothing, or the GIL starves the driver
thread); ``Context.driver_loop`` forces either.
Image arrivals and departures are queued and their handlers run on the polling thread, inside
``poll`` / ``controlled_poll`` / ``images``.  ``Publication.send`` is an awaitable ``offer`` that
retries back pressure.  Counters (``Aeron.counters``; per-stream pub-pos / pub-lmt / sub-pos) are
written by each driver to its directory and shown by ``aeron_compat stat``.
"""

from .client.aeron import Aeron
from .client.codes import (
    ADMIN_ACTION,
    BACK_PRESSURED,
    CLOSED,
    MAX_POSITION_EXCEEDED,
    NOT_CONNECTED,
    Action,
    AeronError,
    MessageTooLongError,
    PublicationClosedError,
    PublicationResult,
    RegistrationError,
)
from .client.context import Context
from .client.directory import UnsafeDirectory
from .client.fragment_assembler import ControlledFragmentAssembler, FragmentAssembler
from .client.header import Header
from .client.idle import (
    BackoffIdleStrategy,
    BusySpinIdleStrategy,
    NoOpIdleStrategy,
    SleepingIdleStrategy,
    YieldingIdleStrategy,
)
from .client.image import Image
from .client.publication import BufferClaim, ExclusivePublication, Publication
from .client.subscription import Subscription
from .client.uri import ChannelUri, ChannelUriStringBuilder, InvalidChannelError
from .driver.media_driver import MediaDriver

__all__ = [
    "ADMIN_ACTION",
    "BACK_PRESSURED",
    "CLOSED",
    "MAX_POSITION_EXCEEDED",
    "NOT_CONNECTED",
    "Action",
    "Aeron",
    "AeronError",
    "BackoffIdleStrategy",
    "BufferClaim",
    "BusySpinIdleStrategy",
    "ChannelUri",
    "ChannelUriStringBuilder",
    "Context",
    "ControlledFragmentAssembler",
    "ExclusivePublication",
    "FragmentAssembler",
    "Header",
    "Image",
    "InvalidChannelError",
    "MediaDriver",
    "MessageTooLongError",
    "NoOpIdleStrategy",
    "Publication",
    "PublicationClosedError",
    "PublicationResult",
    "RegistrationError",
    "SleepingIdleStrategy",
    "Subscription",
    "UnsafeDirectory",
    "YieldingIdleStrategy",
]

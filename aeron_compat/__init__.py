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

Mapping onto Aqueduct.  The embedded ``MediaDriver`` is the process's endpoint.
``aeron:ipc`` is carried inside the driver: a publication hands its frames straight to the
images of matching subscriptions (in-process queues).  For ``aeron:udp`` a subscription's
``endpoint`` is where its driver listens; a publication's driver connects there and hands over one
Aqueduct channel per (stream id, session id): an image is the Receiver that arrived attached to
that message, and its subscriber position travels back as the flow-control window.
``reliable=false`` selects the unreliable lane.  Dynamic multi-destination-cast: subscriptions
with ``control=`` register with the publication's control endpoint over their own connection, and
the publication fans out to every registered destination over those connections (so a client
behind NAT is reached on the connection it opened); manual MDC by ``add_destination`` /
``remove_destination``.  ``control-mode=response`` answers an image on the connection it came
from.  Which network carries ``aeron:udp`` is ``Context.udp_media``: ``loopback`` (drivers of
one process, no sockets: same matching, endpoints, sessions and source identities) or
``aqueduct`` (QUIC).

Poll model.  Aeron's poll is non-blocking and driven by the user's loop, and so is this one:
``offer`` and ``poll`` never block and never need an event loop.  Image arrivals and departures
are queued and their handlers run on the polling thread, inside ``poll`` / ``controlled_poll`` /
``images``.  ``Publication.send`` is an awaitable ``offer`` that retries back pressure, for
asyncio users.  Counters (``Aeron.counters``; per-stream pub-pos / pub-lmt / sub-pos) are written
by each driver to its directory and shown by ``aeron_compat stat``.
"""

from .aeron import Aeron
from .codes import (
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
from .context import Context
from .driver import MediaDriver
from .fragment_assembler import ControlledFragmentAssembler, FragmentAssembler
from .header import Header
from .image import Image
from .publication import BufferClaim, ExclusivePublication, Publication
from .subscription import Subscription
from .uri import ChannelUri, ChannelUriStringBuilder, InvalidChannelError

__all__ = [
    "ADMIN_ACTION",
    "BACK_PRESSURED",
    "CLOSED",
    "MAX_POSITION_EXCEEDED",
    "NOT_CONNECTED",
    "Action",
    "Aeron",
    "AeronError",
    "BufferClaim",
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
    "Publication",
    "PublicationClosedError",
    "PublicationResult",
    "RegistrationError",
    "Subscription",
]

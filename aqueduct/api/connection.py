"""Connection: what a service author holds for one Aqueduct connection, and nothing more.

It is a facade over the library's `ConnectionLink` (link.py), which owns the
engine, the aioquic adapter and the wake-ups; `connect` and `serve` create one
`Connection` per link. Its members are the documented ones: the typed
`entrypoint`, the peer's headers, RTT figures, counters, `close()` and
`wait_closed()`, and `async with`. Library code that needs the link behind a
Connection or a half (metrics, recording, the services, tests) asks `link_of(...)`: neither a Connection nor
a half has a public path to the link or the engine.
"""

from __future__ import annotations

from typing import Any, Generic, TypeAlias, TypeVar, cast, overload

from ..core import app
from ..quic.mtls import PeerIdentity, handshake_identity
from ..quic.protocol import AqueductProtocol
from ..quic.webtransport import Transport, WebTransportProtocol
from ..wire.headers import Headers
from .auth import identity_of
from .codec import Codec, CodecMismatch
from .halves import Receiver, Sender
from .halves.wiring import half_link
from .link import ConnectionLink
from .stats import Stats

__all__ = ["CodecMismatch", "Connection", "QuicLink", "Stats", "link_of"]

E = TypeVar("E")
QuicLink: TypeAlias = ConnectionLink[AqueductProtocol]
"""A link over the QUIC adapter: what `connect` and `serve` make (link.py knows its adapter only as an Adapter)."""


class Connection(Generic[E]):
    """One Aqueduct connection: `entrypoint`, `peer_headers`, `close()`; `async with` closes it.

    `E` is the entrypoint half: `Sender[T]` on a client that connected with `entrypoint=T`, `Receiver[T]` on
    a server that serves with `entrypoint=T` (T: Any without it)."""

    __slots__ = ("_link",)

    def __init__(self, link: QuicLink) -> None:
        self._link = link

    @property
    def entrypoint(self) -> E:
        """Client: the Sender to the server's entrypoint. Server: the Receiver of the client's entrypoint."""
        return self._link.entrypoint  # type: ignore[return-value]

    @property
    def peer_headers(self) -> Headers:
        """The headers the peer announced when the connection opened: (name, value) pairs."""
        return self._link.peer_headers

    def header(self, name: str) -> bytes | None:
        """The first peer header called `name`, if any."""
        return self._link.header(name)

    @property
    def peer_address(self) -> tuple[str, int] | None:
        """The peer's (host, port) on the current network path, if known."""
        return self._link.protocol.peer_address

    @property
    def transport(self) -> Transport:
        """How the peer is connected: "quic" (an Aqueduct client) or "webtransport" (a browser's WebTransport session,
        `serve(webtransport=True)`)."""
        return "webtransport" if isinstance(self._link.protocol, WebTransportProtocol) else "quic"

    @property
    def peer_identity(self) -> PeerIdentity | None:
        """The peer's verified certificate: its name (first SAN, else subject CN), subject, SANs, SHA-256 fingerprint.
        On a server that verifies client certificates (`serve(client_ca=...)`) the client's; on a client the
        server's; None without one."""
        return handshake_identity(self._link.protocol)

    @property
    def zero_rtt(self) -> bool:
        """Whether this connection began in 0-RTT and the server accepted the early data (on a server: whether it
        accepted the client's). False for a full handshake, a refused ticket (the early data was then resent, no
        message lost) and until the handshake completed, which it has once any reply arrived. A client gets 0-RTT
        by connecting with a `session_ticket_store` that holds a ticket of the same server from an earlier
        connection."""
        done = self._link.protocol.handshake
        if not done.done() or done.cancelled() or done.exception() is not None:
            return False
        return bool(done.result().early_data_accepted)

    @property
    def identity(self) -> Any:
        """Server: what the `serve(authenticate=...)` callback returned for this client (None without one)."""
        return identity_of(self._link)

    @property
    def codec(self) -> Codec:
        """The codec messages travel in on this connection (announced in the `codec` header)."""
        return self._link.codec

    @property
    def stats(self) -> Stats:
        """Messages and bytes sent and received on this connection, by delivery mode."""
        return self._link.stats

    @property
    def rtt(self) -> float:
        """The smoothed round-trip time estimate, in seconds."""
        return self._link.protocol.rtt_smoothed

    @property
    def rtt_min(self) -> float:
        """The smallest round-trip time sample seen, in seconds (inf before the first)."""
        return self._link.protocol.rtt_min

    @property
    def is_closed(self) -> bool:
        """Whether the connection has ended."""
        return self._link.is_closed

    async def close(self, code: int = 0, reason: str = "", timeout: float = 5.0) -> None:
        """Close the connection (every open channel ends with ConnectionLost) and wait until QUIC is done.

        A graceful close (code 0) by a client first finishes its entrypoint sender and waits (up to
        `timeout`) until the server has everything, so a server's `async for` over the entrypoint ends
        cleanly instead of raising ConnectionLost."""
        await self._link.close(code, reason, timeout)

    async def wait_closed(self) -> app.ConnectionClosed:
        """Wait until the connection ends; the close code and reason."""
        return await self._link.wait_closed()

    async def __aenter__(self) -> Connection[E]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._link.is_closed else "open"
        return f"<aqueduct.Connection {state} rtt={self.rtt * 1000:.2f} ms>"


@overload
def link_of(of: Connection[Any]) -> QuicLink: ...
@overload
def link_of(of: Sender[Any] | Receiver[Any]) -> QuicLink | None: ...
def link_of(of: Connection[Any] | Sender[Any] | Receiver[Any]) -> QuicLink | None:
    """The library's side of a connection (its engine, adapter and hooks), or of the connection a half talks (or
    talked, if ended here) over (None for a local or moved half): for metrics, recording, the services and
    tests."""
    if isinstance(of, Connection):
        return of._link
    return cast("QuicLink | None", half_link(of))

"""Peer authentication on a server: the `authenticate` callback, and how a refusal reads on the client.

`serve(..., authenticate=cb)` runs the server engines with the acceptance
gate (`EngineConfig.hold_until_accepted`, core/startup.py): once a client's
headers arrive the engine reports `PeerAwaitingAcceptance` and holds
everything else the client sends (0-RTT messages included; bounded by
`max_buffered_bytes` and the start-up deadline) and replies nothing.
`authenticate_peer` then awaits `cb(headers, certificate_identity)`:

- it returns an identity (any object): stored as `conn.identity`, then the
  engine accepts the peer: the server's headers go out, the entrypoint
  receiver is created and the held messages are processed, and only then is
  the `Connection` handed to the application;
- it raises: the connection is closed with AUTHENTICATION_FAILED (close code
  9) and nothing of the client ever reached the application. The reason
  sent is the message of an `AuthenticationFailed` the callback raised; any
  other exception is logged here and the client reads only "authentication
  failed".

`refusal` turns a close that ended a client's connection before it was
ready into `AuthenticationFailed` with a message naming the cause: close
code 9, or one of the TLS alerts a server sends when it refuses a client
certificate (quic/mtls.py).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import AuthenticationFailed
from ..quic.mtls import PeerIdentity, certificate_refusal
from ..wire.errors import CloseCode
from ..wire.headers import Headers

if TYPE_CHECKING:
    from .link import ConnectionLink

log = logging.getLogger("aqueduct.auth")

Authenticate = Callable[[Headers, PeerIdentity | None], Awaitable[Any]]
"""`async def authenticate(headers, identity) -> identity`: the client's headers and its verified certificate
identity (None without mutual TLS); return what the application should know the peer as, or raise."""

REFUSED = "authentication failed"

async def authenticate_peer(link: ConnectionLink, callback: Authenticate, headers: Headers) -> None:
    """Run the server's callback for one client; accept it (engine) or close with AUTHENTICATION_FAILED."""
    try:
        identity = await callback(headers, link.protocol.peer_identity)
    except AuthenticationFailed as exc:
        link.refuse_peer(str(exc) or REFUSED)
        return
    except Exception:
        log.warning("authenticate callback raised; refusing the peer", exc_info=True)
        link.refuse_peer(REFUSED)
        return
    link.accept_peer(identity)


def refusal(error_code: int, reason: str, *, by_peer: bool) -> AuthenticationFailed | None:
    """The error a client raises for a connection the server ended this way before it was ready (None: not a
    refusal of this client)."""
    if not by_peer:
        return None
    if error_code == CloseCode.AUTHENTICATION_FAILED:
        return AuthenticationFailed(f"the server refused this client: {reason or REFUSED}", error_code)
    why = certificate_refusal(error_code)
    if why is None:
        return None
    return AuthenticationFailed(f"{why} ({reason})" if reason else why, error_code)


def is_auth_failure(error_code: int) -> bool:
    """Whether a close code is a refusal by authentication (close code 9 or a client-certificate TLS alert)."""
    return error_code == CloseCode.AUTHENTICATION_FAILED or certificate_refusal(error_code) is not None

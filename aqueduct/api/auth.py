"""Peer authentication on a server: the `authenticate` callback, and how a refusal reads on the client.

`serve(..., authenticate=cb)` runs the server engines with the acceptance
gate (`EngineConfig.hold_until_accepted`, core/startup.py): once a client's
headers arrive the engine reports `PeerAwaitingAcceptance` and holds
everything else the client sends (0-RTT messages included; bounded by
`max_buffered_bytes` and the start-up deadline) and replies nothing.
`Admission` (one per server connection, placed in front of the link's
event listener) then awaits `cb(headers, certificate_identity)`:

- it returns an identity (any object): stored as `conn.identity`, then the
  engine accepts the peer: the server's headers go out, the entrypoint
  receiver is created and the held messages are processed, and only then is
  the `Connection` handed to the application;
- it raises: the connection is closed with AUTHENTICATION_FAILED (close code
  9) and nothing of the client ever reached the application. The reason
  sent is the message of an `AuthenticationFailed` the callback raised; any
  other exception is logged here and the client reads only "authentication
  failed".

`refusal` turns a close that ended a client's `connect` before it was
ready into `AuthenticationFailed` with a message naming the cause: close
code 9, or one of the TLS alerts a server sends when it refuses a client
certificate (quic/mtls.py).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from ..core.app import AppEvent, PeerAwaitingAcceptance
from ..errors import AuthenticationFailed
from ..quic.mtls import PeerIdentity, certificate_refusal, handshake_identity
from ..wire.errors import CloseCode
from ..wire.headers import Headers

log = logging.getLogger("aqueduct.auth")

Authenticate = Callable[[Headers, PeerIdentity | None], Awaitable[Any]]
"""`async def authenticate(headers, identity) -> identity`: the client's headers and its verified certificate
identity (None without mutual TLS); return what the application should know the peer as, or raise."""

REFUSED = "authentication failed"

class Admission:
    """A server connection's authentication: sees the engine's events before the link does, runs the callback
    on PeerAwaitingAcceptance, then accepts (engine) or refuses (AUTHENTICATION_FAILED) the client."""

    def __init__(self, link: Any, callback: Authenticate | None) -> None:
        self._link = link
        self._callback = callback
        self.identity: Any = None
        """What the callback returned for this client."""
        self._task: asyncio.Task[None] | None = None
        inner = link.protocol.listener

        def listener(events: list[AppEvent]) -> None:
            for ev in events:
                if isinstance(ev, PeerAwaitingAcceptance):
                    self._start(ev.headers)
            inner(events)

        link.protocol.listener = listener
        _ADMISSIONS[link] = self

    def _start(self, headers: Headers) -> None:
        if self._callback is None:
            self._accept(None)
        else:
            self._task = asyncio.ensure_future(self._run(self._callback, headers))

    async def _run(self, callback: Authenticate, headers: Headers) -> None:
        try:
            identity = await callback(headers, handshake_identity(self._link.protocol))
        except AuthenticationFailed as exc:
            self._refuse(str(exc) or REFUSED)
            return
        except Exception:
            log.warning("authenticate callback raised; refusing the peer", exc_info=True)
            self._refuse(REFUSED)
            return
        self._accept(identity)

    def _accept(self, identity: Any) -> None:
        link = self._link
        if link.is_closed:
            return
        self.identity = identity
        link.engine.accept_peer(now=asyncio.get_running_loop().time())
        link.protocol.flush()

    def _refuse(self, reason: str) -> None:
        link = self._link
        if not link.is_closed:
            link.engine.close(CloseCode.AUTHENTICATION_FAILED, reason, now=asyncio.get_running_loop().time())
            link.protocol.flush()


_ADMISSIONS: weakref.WeakKeyDictionary[Any, Admission] = weakref.WeakKeyDictionary()


def identity_of(link: object) -> Any:
    """What the server's authenticate callback returned for the client of `link` (None without one)."""
    admission = _ADMISSIONS.get(link)
    return admission.identity if admission is not None else None


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

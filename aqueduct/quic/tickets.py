"""Session ticket stores: the client's (for resumption and 0-RTT) and the server's.

Client: `MemoryTicketStore` or `FileTicketStore` keep the newest ticket per
server, keyed by `server_key`: the server name together with the address
connected to, since one name (one certificate) may stand for several
servers (ports, hosts) that cannot read each other's tickets; presenting
another's ticket silently costs the 0-RTT. `take` removes the ticket, so a
ticket is offered at most once (the server issues a fresh one on every
connection).

A ticket holds its session's resumption secret, so `FileTicketStore` keeps
it from other local users: its directory must belong to this user (or
root) and be writable by no one else, and the file, if there, must be a
regular file of this user's, open to no one else (else ConfigError, as
aeron_compat checks its directory); it is read without following a link,
and written atomically through a temporary file created exclusively with
mode 0600 under a random name (`tempfile.mkstemp`: O_EXCL|O_NOFOLLOW), then
renamed over it. Before, the temporary file had a fixed name and was
created 0644: another user read the secret while it was written, and a
link planted under that name made the client overwrite a file of the
attacker's choosing.

Server: `ServerTicketStore` holds the tickets this process issued. With
`single_use=True` a ticket is removed the moment a ClientHello presents it,
so a replayed ClientHello finds nothing: aioquic then falls back to a full
handshake and cannot decrypt the replayed 0-RTT packets. Because the store
lives only in this process's memory (never persisted, shared or rolled
back, and gone on restart together with the tickets themselves), a
successful resumption proves the early data is the first use of its ticket:
this is the one case in which a server may process 0-RTT work before the
handshake completes (EngineConfig.replay_safe_0rtt). A multi-use store
allows replays, so the engine holds 0-RTT work until the handshake ends.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import pwd
import stat
import tempfile
from pathlib import Path
from typing import Any, Protocol

import cbor2
from aioquic.tls import CipherSuite, SessionTicket

from ..errors import ConfigError

log = logging.getLogger("aqueduct.quic")


def server_key(server_name: str, host: str, port: int) -> str:
    """The key a client keeps a server's tickets under: `name@host:port` (`name@[v6]:port`), the address being
    the one connected to (resolved)."""
    return f"{server_name}@[{host}]:{port}" if ":" in host else f"{server_name}@{host}:{port}"


class ClientTicketStore(Protocol):
    """Where a client keeps session tickets between connections, one per server (see `server_key`)."""

    def put(self, server: str, ticket: SessionTicket) -> None:
        """Remember a ticket the server `server` (a `server_key`) issued."""

    def take(self, server: str) -> SessionTicket | None:
        """Remove and return a still-valid ticket of `server` (a `server_key`), if any."""


def _valid(ticket: SessionTicket) -> bool:
    return ticket.not_valid_after > datetime.datetime.now(datetime.UTC)


class MemoryTicketStore:
    """Client tickets in memory, newest per server (name and address)."""

    def __init__(self) -> None:
        self._tickets: dict[str, SessionTicket] = {}

    def put(self, server: str, ticket: SessionTicket) -> None:
        """Remember `ticket` of `server`."""
        self._tickets[server] = ticket

    def take(self, server: str) -> SessionTicket | None:
        """Remove and return the ticket of `server`, if still valid."""
        ticket = self._tickets.pop(server, None)
        return ticket if ticket is not None and _valid(ticket) else None


def _ticket_to_map(t: SessionTicket) -> dict[str, object]:
    return {
        "age_add": t.age_add,
        "cipher_suite": int(t.cipher_suite),
        "not_valid_after": t.not_valid_after,
        "not_valid_before": t.not_valid_before,
        "resumption_secret": t.resumption_secret,
        "server_name": t.server_name,
        "ticket": t.ticket,
        "max_early_data_size": t.max_early_data_size,
        "other_extensions": [[k, v] for k, v in t.other_extensions],
    }


def _ticket_from_map(m: dict[str, Any]) -> SessionTicket:
    ext = m["other_extensions"]
    assert isinstance(ext, list)
    return SessionTicket(
        age_add=int(m["age_add"]),
        cipher_suite=CipherSuite(m["cipher_suite"]),
        not_valid_after=m["not_valid_after"],
        not_valid_before=m["not_valid_before"],
        resumption_secret=bytes(m["resumption_secret"]),
        server_name=str(m["server_name"]),
        ticket=bytes(m["ticket"]),
        max_early_data_size=m["max_early_data_size"],
        other_extensions=[(int(k), bytes(v)) for k, v in ext],
    )


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def check_private_file(path: Path) -> None:
    """Refuse (ConfigError) a file for secrets whose directory another user could write to, or which is a link,
    not a regular file, not this user's, or open to others; a file not there yet is fine."""
    me = os.geteuid()
    directory = path.parent.resolve()
    st = directory.stat()
    if st.st_uid not in (me, 0) or st.st_mode & 0o022:
        raise ConfigError(f"ticket file {path}: its directory {directory} is owned by {_owner(st.st_uid)} with mode "
                          f"{stat.S_IMODE(st.st_mode):o}; it must be this user's ({_owner(me)}) or root's and "
                          "writable by no one else (another user could replace the file or plant a link)")
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"ticket file {path} is not a regular file (a link or other: it could lead anywhere)")
    if st.st_uid != me or st.st_mode & 0o077:
        raise ConfigError(f"ticket file {path} is owned by {_owner(st.st_uid)} with mode {stat.S_IMODE(st.st_mode):o};"
                          f" it must be this user's ({_owner(me)}) and open to no one else")


class FileTicketStore:
    """Client tickets in a CBOR file (mode 0600, in a directory only this user can write: ConfigError otherwise),
    newest per server (name and address); unreadable files count as empty."""

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)
        check_private_file(self._path)

    def _load(self) -> dict[str, SessionTicket]:
        try:
            fd = os.open(self._path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return {}
        try:
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
                    return {}  # (swapped for another's since it was checked: not ours to believe)
                raw = cbor2.loads(f.read())
            return {name: _ticket_from_map(m) for name, m in raw.items()}
        except (OSError, ValueError, TypeError, KeyError, AssertionError, AttributeError, cbor2.CBORDecodeError):
            return {}

    def _save(self, tickets: dict[str, SessionTicket]) -> None:
        data = cbor2.dumps({name: _ticket_to_map(t) for name, t in tickets.items()}, datetime_as_timestamp=True)
        try:
            check_private_file(self._path)
            fd, tmp = tempfile.mkstemp(prefix=f".{self._path.name}.", suffix=".tmp", dir=self._path.parent)
        except (ConfigError, OSError):
            log.warning("session ticket not saved to %s", self._path, exc_info=True)
            return
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self._path)
        except OSError:
            log.warning("session ticket not saved to %s", self._path, exc_info=True)
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def put(self, server: str, ticket: SessionTicket) -> None:
        """Remember `ticket` of `server` in the file."""
        tickets = self._load()
        tickets[server] = ticket
        self._save(tickets)

    def take(self, server: str) -> SessionTicket | None:
        """Remove and return the ticket of `server` from the file, if still valid."""
        tickets = self._load()
        ticket = tickets.pop(server, None)
        if ticket is not None:
            self._save(tickets)
        return ticket if ticket is not None and _valid(ticket) else None


class ServerTicketStore:
    """Tickets issued by this server process, in memory; `single_use` makes 0-RTT replay impossible."""

    def __init__(self, single_use: bool = False, max_tickets: int = 10_000) -> None:
        self.single_use = single_use
        self.max_tickets = max_tickets
        """Tickets kept at most (each connection issues one); the oldest go first (a full handshake for them)."""
        self._tickets: dict[bytes, SessionTicket] = {}

    def add(self, ticket: SessionTicket) -> None:
        """aioquic's session_ticket_handler: remember an issued ticket (forgetting the oldest beyond the bound)."""
        self._tickets[ticket.ticket] = ticket
        while len(self._tickets) > self.max_tickets:
            del self._tickets[next(iter(self._tickets))]

    def fetch(self, label: bytes) -> SessionTicket | None:
        """aioquic's session_ticket_fetcher: look a presented ticket up (and forget it if single-use)."""
        if self.single_use:
            return self._tickets.pop(label, None)
        return self._tickets.get(label)

    def __len__(self) -> int:
        return len(self._tickets)

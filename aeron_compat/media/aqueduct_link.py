# A Link is one Aqueduct connection between two drivers, used both ways: the client's entrypoint
# Sender carries control messages to the server, and a Sender the client hands over in its first
# ("hello") message carries them back.  Control messages are queued and written in order by one
# task; incoming ones go to the `on_control` callback the network gave (link.py's `ControlLink`).
# Also here: the shared development certificate and the peer address an image reports as its
# source identity.
"""`Link`, development certificates and peer addresses for the Aqueduct transport."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from aqueduct.api import Connection, Receiver, Sender
from aqueduct.api.connection import link_of
from aqueduct.errors import AqueductError
from aqueduct.quic.certs import DevCerts, make_dev_certs

from ..client.counters import base_dir
from ..client.directory import private_dir
from .link import ControlLink, OnControl


def dev_certs_dir() -> Path:
    """Where the user's development certificates live: `$AERON_COMPAT_DIR/dev-certs` when that is set, else
    `$XDG_STATE_HOME/aeron_compat/dev-certs` (~/.local/state/...). Never the shared temporary directory: the CA's
    private key is in it (it was once /tmp/aeron_compat-$USER/dev-certs)."""
    if os.environ.get("AERON_COMPAT_DIR"):
        return private_dir(base_dir()) / "dev-certs"
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return private_dir(state / "aeron_compat") / "dev-certs"


def dev_certs(directory: Path | None = None) -> DevCerts:
    """The user's shared development CA and loopback certificate (made once, atomically; see `dev_certs_dir`)."""
    target = directory or dev_certs_dir()  # (private_dir: another user's directory could plant a CA)
    names = DevCerts(target / "ca.pem", target / "ca.key", target / "cert.pem", target / "key.pem")
    if not names.key.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=".certs"))
        make_dev_certs(scratch)
        try:
            os.rename(scratch, target)
        except OSError:
            shutil.rmtree(scratch, ignore_errors=True)
    return names


def peer_of(conn: Connection[Any]) -> str:
    """The peer's UDP address as host:port."""
    addr = conn.peer_address
    return f"{addr[0]}:{addr[1]}" if addr is not None else "unknown:0"


class Link(ControlLink):
    """One Aqueduct connection between two drivers, with an ordered control channel each way."""

    def __init__(self, on_control: OnControl, conn: Connection[Any],
                 out: Sender[Any], inc: Receiver[Any], peer: str, endpoint: str | None = None,
                 listener: str | None = None) -> None:
        super().__init__(on_control, peer, endpoint, listener)
        self.conn, self.out, self.inc = conn, out, inc

    @property
    def datagram_limit(self) -> int:
        """Largest unreliable message on this connection."""
        return int(link_of(self.conn).protocol.datagram_payload_limit)

    async def aclose(self) -> None:
        """Close the connection (waiting at most a second)."""
        await self.conn.close(timeout=1.0)

    async def run(self) -> None:
        """Write queued control messages and dispatch incoming ones until the connection ends."""
        writer = asyncio.create_task(self._write())
        try:
            async for msg in self.inc:
                if isinstance(msg, dict):
                    self.on_control(self, msg)
        except (AqueductError, ConnectionError):
            pass
        finally:
            self.alive = False
            writer.cancel()

    async def _write(self) -> None:
        with contextlib.suppress(AqueductError, ConnectionError):
            while True:
                while self._queue:
                    await self.out.send(self._queue.popleft())
                self._wake.clear()
                await self._wake.wait()

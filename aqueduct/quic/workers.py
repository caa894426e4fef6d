"""Several server processes on one UDP port: SO_REUSEPORT, worker-tagged connection IDs, forwarding.

N worker processes each bind the same (host, port) with SO_REUSEPORT; the kernel spreads incoming
datagrams over their sockets by a hash of the 4-tuple, so a client's packets keep reaching one worker
while its address stays the same, and that worker owns the connection. Every server connection ID a
worker issues (the first one and each NEW_CONNECTION_ID) begins with the worker's index (`tag_cid`; the
other bytes stay random), so any worker can read a short-header packet's owner from its destination ID.

When a client's address changes (NAT rebinding, a new network, a migration) its packets may hash to
another worker. That worker finds no connection for the ID, reads the owner from the first byte, and
hands the datagram with the client's address to the owner over a unix datagram socket. The owner
processes it as if its own UDP socket had read it and answers from its own socket, which has the same
address, so the client sees one server. Long-header packets (Initial, 0-RTT, Handshake, version
negotiation) are never forwarded, and a forwarded one is dropped: a handshake stays where its first packet
landed, and a client does not migrate before the handshake completes. A forwarded datagram is never
forwarded again; one that cannot be sent (the owner is gone, its socket full) is dropped and counted, as a
lost packet would be.

The inbox is private to the server's user. Worker 0 creates a fresh directory (`mkdtemp`: a random name,
mode 0700, owned by the server's uid; removed when worker 0 closes) and every worker binds
`DIR/worker-I` in it; the others are given the directory and refuse it unless it is a real directory (not a
symlink) owned by their uid with no access for group or others. Other local users can neither send to an
inbox nor bind a name first (the abstract `\\0aqueduct-worker-PORT-I` names this replaced could be both;
decision SEC-1). A worker that finds its name taken fails with a clear error.

The forwarding frame is binary: `!B` address family (4 or 6), the raw 4 or 16 address bytes, `!H` port,
then the datagram. The receiver drops (and counts) a frame whose family is not its socket's, whose port is
0, that is short, or whose datagram is empty or a long-header packet.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import os
import shutil
import socket
import stat
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError

MAX_WORKERS = 256
"""One byte of a connection ID names the worker."""
_FAMILY = {4: 4, 6: 16}
"""Address family byte of a forwarding frame -> address length."""


def tag_cid(worker: int, length: int) -> bytes:
    """A random connection ID of `length` bytes whose first byte is `worker`."""
    return bytes((worker,)) + os.urandom(length - 1)


def socket_path(directory: Path, worker: int) -> Path:
    """The unix socket worker `worker` receives forwarded datagrams on, in the group's directory."""
    return directory / f"worker-{worker}"


def reuse_port(sock: socket.socket) -> None:
    """Let several sockets (processes) bind the same UDP address; the kernel spreads datagrams over them."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)


def new_directory() -> Path:
    """A fresh directory for a group's sockets: random name, mode 0700, ours (worker 0 makes it)."""
    return Path(tempfile.mkdtemp(prefix="aqueduct-workers-"))


def check_directory(directory: Path) -> None:
    """Refuse a group directory another user could reach: it must be a real directory, ours, mode 0700."""
    try:
        st = os.lstat(directory)
    except OSError as exc:
        raise ConfigError(f"workers' directory {directory}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"workers' directory {directory} is not a directory (a symlink or a file): refused")
    if st.st_uid != os.geteuid():
        raise ConfigError(f"workers' directory {directory} belongs to uid {st.st_uid}, not to us "
                          f"(uid {os.geteuid()}): refused")
    if st.st_mode & 0o077:
        raise ConfigError(f"workers' directory {directory} has mode {stat.S_IMODE(st.st_mode):o}, "
                          f"open to other users (want 700): refused")


def pack_forwarded(addr: Any, data: bytes) -> bytes:
    """The forwarding frame: the client's address, then its datagram."""
    raw = ipaddress.ip_address(str(addr[0]).partition("%")[0]).packed
    return struct.pack("!B", 4 if len(raw) == 4 else 6) + raw + struct.pack("!H", int(addr[1])) + data


def unpack_forwarded(frame: bytes, ipv6: bool) -> tuple[Any, bytes] | None:
    """(client address as the UDP socket would give it, datagram) of a well-formed forwarding frame, else
    None: the family must be the receiving socket's, the port not 0, the datagram a short-header packet."""
    if not frame or frame[0] != (6 if ipv6 else 4):
        return None
    n = _FAMILY[frame[0]]
    if len(frame) < 1 + n + 2 + 1:
        return None
    host = str(ipaddress.ip_address(frame[1:1 + n]))
    (port,) = struct.unpack_from("!H", frame, 1 + n)
    data = frame[3 + n:]
    if port == 0 or data[0] & 0x80:  # (a long header: never forwarded)
        return None
    addr: Any = (host, port, 0, 0) if ipv6 else (host, port)
    return addr, data


class WorkerGroup:
    """This process's place among the workers sharing one UDP port, and its forwarding socket."""

    def __init__(self, worker: int, workers: int, cid_length: int, directory: Path | str | None = None) -> None:
        if not 1 < workers <= MAX_WORKERS or not 0 <= worker < workers:
            raise ValueError(f"worker {worker} of {workers}: need 0 <= worker < workers <= {MAX_WORKERS}")
        self.worker = worker
        self.workers = workers
        self.cid_length = cid_length
        self.directory = Path(directory) if directory is not None else None
        """Where the group's sockets are (worker 0 makes it in `start`)."""
        self._made_directory = False
        self.forwarded = 0
        """Datagrams this worker handed to another (their connection is the other's)."""
        self.received = 0
        """Datagrams other workers handed to this one."""
        self.dropped = 0
        """Datagrams that could not be handed over, or arrived malformed."""
        self._transport: asyncio.DatagramTransport | None = None
        self._path: Path | None = None

    def owner(self, cid: bytes) -> int | None:
        """The worker whose connection ID `cid` is, if it is one of the group's (and not this worker's)."""
        if len(cid) != self.cid_length:
            return None
        owner = cid[0]
        return owner if owner < self.workers and owner != self.worker else None

    async def start(self, ipv6: bool, deliver: Callable[[bytes, Any], None]) -> None:
        """Listen for datagrams other workers forward; `deliver(datagram, client address)` handles each."""
        if self.directory is None:
            if self.worker != 0:
                raise ConfigError(f"worker {self.worker} needs the directory worker 0 made (its `worker_dir`)")
            self.directory = new_directory()
            self._made_directory = True
        check_directory(self.directory)
        path = socket_path(self.directory, self.worker)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * 1024 * 1024)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
            try:
                sock.bind(str(path))
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise ConfigError(f"worker {self.worker} of this group already runs ({path} exists)") from None
                raise ConfigError(f"cannot listen for other workers on {path}: {exc.strerror}") from None
            sock.setblocking(False)
        except BaseException:
            sock.close()
            self._remove_directory()
            raise
        self._path = path
        group = self

        class Inbox(asyncio.DatagramProtocol):
            def datagram_received(self, frame: bytes, _: Any) -> None:
                got = unpack_forwarded(frame, ipv6)
                if got is None:
                    group.dropped += 1
                    return
                group.received += 1
                deliver(got[1], got[0])

            def error_received(self, exc: Exception) -> None:
                group.dropped += 1

        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(Inbox, sock=sock)
        self._transport = transport

    def forward(self, owner: int, data: bytes, addr: Any) -> None:
        """Hand a datagram that arrived here to the worker owning its connection."""
        transport = self._transport
        if transport is None or transport.is_closing() or self.directory is None:
            self.dropped += 1
            return
        try:
            transport.sendto(pack_forwarded(addr, data), str(socket_path(self.directory, owner)))
        except (OSError, ValueError):
            self.dropped += 1
            return
        self.forwarded += 1

    def close(self) -> None:
        """Stop receiving forwarded datagrams; remove this worker's socket (worker 0: the directory)."""
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        if self._path is not None:
            self._path.unlink(missing_ok=True)
            self._path = None
        self._remove_directory()

    def _remove_directory(self) -> None:
        if self._made_directory and self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self._made_directory = False

"""Several server processes on one UDP port: SO_REUSEPORT, worker-tagged connection IDs, forwarding.

N worker processes each bind the same (host, port) with SO_REUSEPORT; the kernel spreads incoming
datagrams over their sockets by a hash of the 4-tuple, so a client's packets keep reaching one worker
while its address stays the same, and that worker owns the connection. Every server connection ID a
worker issues (the first one and each NEW_CONNECTION_ID) begins with the worker's index (`tag_cid`; the
other bytes stay random), so any worker can read a short-header packet's owner from its destination ID.

When a client's address changes (NAT rebinding, a new network, a migration) its packets may hash to
another worker. That worker finds no connection for the ID, reads the owner from the first byte, and
hands the datagram with the client's address to the owner over a unix datagram socket (Linux abstract
namespace, named by port and index: nothing to clean up). The owner processes it as if its own UDP
socket had read it and answers from its own socket, which has the same address, so the client sees one
server. Long-header packets (Initial, 0-RTT, Handshake) are never forwarded: a handshake stays where its
first packet landed, and a client does not migrate before the handshake completes. A forwarded datagram
is never forwarded again; one that cannot be sent (the owner is gone, its socket full) is dropped and
counted, as a lost packet would be.

The forwarding frame is the client's address (`!B` host length, host in ASCII, `!H` port) and then the
datagram. Forwarding is local (one host), between processes of one server.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from collections.abc import Callable
from typing import Any

MAX_WORKERS = 256
"""One byte of a connection ID names the worker."""


def tag_cid(worker: int, length: int) -> bytes:
    """A random connection ID of `length` bytes whose first byte is `worker`."""
    return bytes((worker,)) + os.urandom(length - 1)


def socket_name(port: int, worker: int) -> str:
    """The abstract unix socket a worker of the server on `port` receives forwarded datagrams on."""
    return f"\0aqueduct-worker-{port}-{worker}"


def reuse_port(sock: socket.socket) -> None:
    """Let several sockets (processes) bind the same UDP address; the kernel spreads datagrams over them."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)


def pack_forwarded(addr: Any, data: bytes) -> bytes:
    """The forwarding frame: the client's address, then its datagram."""
    host = str(addr[0]).encode("ascii")
    return struct.pack("!B", len(host)) + host + struct.pack("!H", int(addr[1])) + data


def unpack_forwarded(frame: bytes, ipv6: bool) -> tuple[Any, bytes]:
    """(client address as the UDP socket would give it, datagram) of a forwarding frame."""
    n = frame[0]
    host = frame[1:1 + n].decode("ascii")
    (port,) = struct.unpack_from("!H", frame, 1 + n)
    addr: Any = (host, port, 0, 0) if ipv6 else (host, port)
    return addr, frame[3 + n:]


class WorkerGroup:
    """This process's place among the workers sharing one UDP port, and its forwarding socket."""

    def __init__(self, worker: int, workers: int, cid_length: int) -> None:
        if not 1 < workers <= MAX_WORKERS or not 0 <= worker < workers:
            raise ValueError(f"worker {worker} of {workers}: need 0 <= worker < workers <= {MAX_WORKERS}")
        self.worker = worker
        self.workers = workers
        self.cid_length = cid_length
        self.port = 0
        self.forwarded = 0
        """Datagrams this worker handed to another (their connection is the other's)."""
        self.received = 0
        """Datagrams other workers handed to this one."""
        self.dropped = 0
        """Datagrams that could not be handed over (or arrived malformed)."""
        self._transport: asyncio.DatagramTransport | None = None

    def owner(self, cid: bytes) -> int | None:
        """The worker whose connection ID `cid` is, if it is one of the group's (and not this worker's)."""
        if len(cid) != self.cid_length:
            return None
        owner = cid[0]
        return owner if owner < self.workers and owner != self.worker else None

    async def start(self, port: int, ipv6: bool, deliver: Callable[[bytes, Any], None]) -> None:
        """Listen for datagrams other workers forward; `deliver(datagram, client address)` handles each."""
        self.port = port
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * 1024 * 1024)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
        sock.bind(socket_name(port, self.worker))
        sock.setblocking(False)
        group = self

        class Inbox(asyncio.DatagramProtocol):
            def datagram_received(self, frame: bytes, _: Any) -> None:
                try:
                    addr, data = unpack_forwarded(frame, ipv6)
                except (IndexError, struct.error, UnicodeDecodeError):
                    group.dropped += 1
                    return
                group.received += 1
                deliver(data, addr)

            def error_received(self, exc: Exception) -> None:
                group.dropped += 1

        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(Inbox, sock=sock)
        self._transport = transport

    def forward(self, owner: int, data: bytes, addr: Any) -> None:
        """Hand a datagram that arrived here to the worker owning its connection."""
        transport = self._transport
        if transport is None or transport.is_closing():
            self.dropped += 1
            return
        try:
            transport.sendto(pack_forwarded(addr, data), socket_name(self.port, owner))
        except OSError:
            self.dropped += 1
            return
        self.forwarded += 1

    def close(self) -> None:
        """Stop receiving forwarded datagrams."""
        if self._transport is not None:
            self._transport.close()
            self._transport = None

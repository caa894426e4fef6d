"""Opening QUIC endpoints: a client connection or a listening server, with our protocol and paced connections.

`open_client` resolves the address, makes a UDP socket with large buffers,
builds a PacedQuicConnection (resuming with a stored ticket if there is
one, so early data can go out in 0-RTT) and starts the handshake without
waiting for it. `open_server` listens with aioquic's QuicServer (limited per address, in
total and in start-up time: limits.py), a server ticket store for
resumption, and our protocol for every connection. Both read their socket
into 64 KiB buffers (`_small_reads`).

A client's socket is connected to its server, so its transport sends
without naming the address (`ConnectedTransport`): aioquic names it in every
`sendto`, which the stdlib loop accepts on a connected socket but uvloop
refuses (EISCONN, reported to `error_received`, nothing sent).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from aioquic.tls import SessionTicket

from ..core.config import EngineConfig
from ..wire.channel_id import Side
from .aioquic_connection import PacedQuicConnection
from .certs import normalize_fingerprint
from .drain import MAX_DATAGRAM, drainable_socket
from .limits import LimitedQuicServer
from .mtls import ClientAuth
from .protocol import AqueductProtocol
from .settings import TransportSettings, client_configuration, server_configuration
from .tickets import ClientTicketStore, ServerTicketStore, server_key
from .webtransport import H3_ALPN, WebTransportProtocol, WebTransportSessions
from .workers import WorkerGroup, reuse_port


def _tune_socket(sock: socket.socket, size: int) -> None:
    for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, opt, size)
        except OSError:
            pass  # the kernel caps it (net.core.rmem_max); a smaller buffer still works


def _small_reads(transport: asyncio.BaseTransport) -> None:
    """Read datagrams into 64 KiB buffers (a UDP payload is never larger), not stdlib asyncio's 256 KiB.

    glibc serves 256 KiB with mmap, so each datagram read cost an mmap, an mremap (shrinking the result)
    and a munmap: three system calls per packet. uvloop's transport is left alone."""
    if drainable_socket(transport) is not None:
        transport.max_size = MAX_DATAGRAM  # type: ignore[attr-defined]


class ConnectedTransport(asyncio.DatagramTransport):
    """A client's datagram transport on a connected socket: `sendto(data, addr)` sends to the connected peer
    without naming it (the address is the one the socket is connected to: aioquic's client never changes it)."""

    __slots__ = ("_inner",)

    def __init__(self, inner: asyncio.DatagramTransport) -> None:
        super().__init__()
        self._inner = inner

    def sendto(self, data: Any, addr: Any = None) -> None:
        """Send `data` to the connected peer (`addr` is that peer: not passed on)."""
        self._inner.sendto(data)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """The wrapped transport's (its socket, peername, ...)."""
        return self._inner.get_extra_info(name, default)

    def is_closing(self) -> bool:
        """Whether the wrapped transport is closing."""
        return self._inner.is_closing()

    def close(self) -> None:
        """Close the wrapped transport."""
        self._inner.close()

    def abort(self) -> None:
        """Abort the wrapped transport."""
        self._inner.abort()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        """Hand the wrapped transport's events to `protocol`."""
        self._inner.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        """The protocol the wrapped transport reports to."""
        return self._inner.get_protocol()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)  # the rest of the wrapped transport as it is (e.g. its max_size)


async def _connected_endpoint(factory: Callable[[], AqueductProtocol], sock: socket.socket) -> AqueductProtocol:
    """Run a client protocol on its connected socket, reading small (`_small_reads`), sending without address."""
    transport, protocol = await asyncio.get_running_loop().create_datagram_endpoint(factory, sock=sock)
    _small_reads(transport)
    protocol.use_transport(ConnectedTransport(transport))
    return protocol


async def _resolve(loop: asyncio.AbstractEventLoop, host: str, port: int) -> tuple[int, Any]:
    """(address family, socket address) of host:port. An IP address is taken as it is: asyncio's getaddrinfo
    runs in a thread, a hop to the executor and back (two wake-ups) on every connect."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if isinstance(ip, ipaddress.IPv4Address):
        return socket.AF_INET, (str(ip), port)
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id is None:
        return socket.AF_INET6, (str(ip), port, 0, 0)
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    family, _, _, _, addr = infos[0]
    return family, addr


async def open_client(
    host: str,
    port: int,
    *,
    headers: Iterable[tuple[str, bytes]] = (),
    settings: TransportSettings | None = None,
    engine_config: EngineConfig | None = None,
    ca: str | Path | None = None,
    fingerprint: str | None = None,
    server_name: str | None = None,
    tickets: ClientTicketStore | None = None,
    cert: str | Path | None = None,
    key: str | Path | None = None,
) -> AqueductProtocol:
    """Start a client connection; the returned protocol's engine may send at once (0-RTT if resuming)."""
    settings = settings or TransportSettings()
    loop = asyncio.get_running_loop()
    name = server_name or host
    family, addr = await _resolve(loop, host, port)
    ticket_key = server_key(name, str(addr[0]), int(addr[1]))
    ticket = tickets.take(ticket_key) if tickets is not None else None
    pinned = normalize_fingerprint(fingerprint) if fingerprint is not None else None
    config = client_configuration(settings, server_name=name, ca=ca, pinned=pinned is not None, session_ticket=ticket,
                                  cert=cert, key=key)
    sock = socket.socket(family, socket.SOCK_DGRAM)
    _tune_socket(sock, settings.socket_buffer)
    sock.bind(("::", 0) if family == socket.AF_INET6 else ("0.0.0.0", 0))
    # A connected socket hears ICMP port-unreachable (as ConnectionRefusedError): nothing listening ends the
    # attempt at once. aioquic's client never changes its server address, so the socket talks to one peer.
    sock.connect(addr)

    def on_ticket(new: SessionTicket) -> None:
        # A pinned client stores tickets only from a server that passed the pin check.
        if tickets is not None and (pinned is None or protocol._handshake_ok):
            tickets.put(ticket_key, new)

    quic = PacedQuicConnection(configuration=config, session_ticket_handler=on_ticket)

    def factory() -> AqueductProtocol:
        return AqueductProtocol(
            quic, side=Side.CLIENT, headers=headers, engine_config=engine_config, settings=settings,
            pinned_fingerprint=pinned, peer=f"{host}:{port}",
            trust=("the pinned fingerprint" if pinned is not None else f"CA file {ca}" if ca is not None
                   else "the system trust store"),
        )

    protocol = await _connected_endpoint(factory, sock)
    protocol.early_data_attempted = ticket is not None and ticket.max_early_data_size is not None
    protocol.start_engine()
    protocol.connect(addr, transmit=False)
    protocol.flush()
    return protocol


async def rebind(protocol: AqueductProtocol) -> tuple[str, int]:
    """Move a client connection to a new local UDP port: what a NAT rebinding or a change of network does to
    a client's address. The connection, its streams and channels go on; it switches to a fresh connection ID
    (as RFC 9000 asks of a migrating client) and sends a PING from the new address at once. Returns the new
    local address."""
    if protocol.side is not Side.CLIENT:
        raise ValueError("only a client connection moves to a new address")
    old = protocol.transport
    assert old is not None
    old_sock = old.get_extra_info("socket")
    sock = socket.socket(old_sock.family, socket.SOCK_DGRAM)
    _tune_socket(sock, protocol.settings.socket_buffer)
    sock.bind(("::", 0) if old_sock.family == socket.AF_INET6 else ("0.0.0.0", 0))
    sock.connect(old_sock.getpeername())
    old.set_protocol(asyncio.DatagramProtocol())  # the old socket's end no longer concerns the connection
    old.close()
    await _connected_endpoint(lambda: protocol, sock)
    quic = protocol.quic
    quic.change_connection_id()
    quic.send_ping(0)
    protocol.transmit()
    name = sock.getsockname()
    return str(name[0]), int(name[1])


async def open_server(
    host: str,
    port: int,
    *,
    cert: str | Path,
    key: str | Path,
    on_connection: Callable[[AqueductProtocol], None],
    headers: Iterable[tuple[str, bytes]] = (),
    settings: TransportSettings | None = None,
    engine_config: EngineConfig | None = None,
    tickets: ServerTicketStore | None = None,
    client_auth: ClientAuth | None = None,
    workers: int = 1,
    worker: int = 0,
    worker_dir: str | Path | None = None,
    webtransport: WebTransportSessions | None = None,
) -> tuple[asyncio.DatagramTransport, LimitedQuicServer]:
    """Listen on host:port; `on_connection` gets each new protocol (before its handshake completes).

    With `client_auth` every client is asked for a certificate verified under it (quic/mtls.py), and no
    session ticket is issued: a resumed session would skip the certificate, so each connection proves it anew.

    `workers` > 1: this is worker `worker` of that many processes sharing the port (workers.py): the socket
    is bound with SO_REUSEPORT, connection IDs carry the worker, and packets of this worker's connections
    that reach another worker are handed over (the first worker may use port 0; the others need its port, and
    `worker_dir`, the private directory of the group's sockets that worker 0 made: `server.workers.directory`).
    Worker 0 refuses a port some other socket already has.

    `webtransport`: also accept browsers' WebTransport sessions (ALPN h3) on the same port, admitted and
    counted by it (webtransport.py); each connection decides at its ALPN which kind it is."""
    settings = settings or TransportSettings()
    tickets = tickets if tickets is not None else ServerTicketStore()
    config = server_configuration(settings, cert=cert, key=key)
    if webtransport is not None:
        config.alpn_protocols = [*(config.alpn_protocols or ()), H3_ALPN]
    # 0-RTT work may run before the handshake only with a single-use ticket store (see tickets.py).
    engine_config = replace(engine_config or EngineConfig(), replay_safe_0rtt=tickets.single_use)
    header_list = tuple(headers)
    loop = asyncio.get_running_loop()

    def create_protocol(quic: Any, stream_handler: Any = None) -> AqueductProtocol:
        if client_auth is not None:  # before the first packet: its TLS context is built then (aioquic_connection.py)
            PacedQuicConnection.adopt(quic).client_auth = client_auth
        if webtransport is not None:  # (it tells on_connection once it is a plain connection or a session)
            return WebTransportProtocol(quic, stream_handler, side=Side.SERVER, headers=header_list,
                                        engine_config=engine_config, settings=settings, webtransport=webtransport,
                                        on_connection=on_connection)
        protocol = AqueductProtocol(
            quic, stream_handler, side=Side.SERVER, headers=header_list, engine_config=engine_config,
            settings=settings,
        )
        on_connection(protocol)
        return protocol

    group = WorkerGroup(worker, workers, config.connection_id_length, worker_dir) if workers > 1 else None
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_DGRAM, flags=socket.AI_PASSIVE)
    family = infos[0][0]
    if group is not None and worker == 0 and port != 0:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:  # (raises if anyone serves it: this group is new)
            probe.bind(infos[0][4])
    sock = socket.socket(family, socket.SOCK_DGRAM)
    _tune_socket(sock, settings.socket_buffer)
    if group is not None:
        reuse_port(sock)
    sock.bind(infos[0][4])
    transport, server = await loop.create_datagram_endpoint(
        lambda: LimitedQuicServer(
            settings=settings,
            configuration=config,
            create_protocol=create_protocol,
            session_ticket_fetcher=tickets.fetch if client_auth is None else None,
            session_ticket_handler=tickets.add if client_auth is None else None,
            workers=group,
        ),
        sock=sock,
    )
    _small_reads(transport)
    if group is not None:
        try:
            await group.start(family == socket.AF_INET6, server.forwarded_datagram)
        except BaseException:
            transport.close()
            raise
    return transport, server


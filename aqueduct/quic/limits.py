"""Server admission limits: connections per client address, connections in total, and a start-up deadline.

`LimitedQuicServer` is aioquic's QuicServer with three rules, all from
TransportSettings. A datagram that would open a new connection (a full-size
Initial for an unknown connection ID) is dropped without reply when its
source address already holds `max_connections_per_address` connections,
the server holds `max_connections`, or the server is draining (`accepting`
false); the client's handshake then times out (a reply would be an
amplification tool). Every accepted connection must
complete its TLS handshake *and* deliver the client's Aqueduct headers
(and pass `authenticate`, when the server has one) within `handshake_timeout`, else it is closed with LIMIT_EXCEEDED: a
slow-loris client cannot hold a slot longer than that. A connection's slot
is freed when it terminates.

What it needs of aioquic's private connection table (which IDs it knows,
whether a datagram opens a connection, an O(1) termination) is
aioquic_server.py's, the door it subclasses.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

from ..wire.errors import CloseCode
from .aioquic_server import AioquicServer
from .burst import Burst
from .drain import drain, drainable_socket
from .protocol import AqueductProtocol
from .settings import TransportSettings
from .workers import WorkerGroup


class LimitedQuicServer(AioquicServer):
    """A QuicServer that bounds connections per address and in total, and how long start-up may take."""

    def __init__(self, *, settings: TransportSettings, create_protocol: Callable[..., Any],
                 workers: WorkerGroup | None = None, **kwargs: Any) -> None:
        super().__init__(create_protocol=self._create, **kwargs)
        self.workers = workers
        """This server's place among processes sharing its port (workers.py), or None (the only one)."""
        self._settings = settings
        self._inner_create = create_protocol
        self._addr: str = ""
        self.per_address: dict[str, int] = {}
        """Live connections per client address."""
        self.refused = 0
        """New connections dropped by a limit or because the server is draining."""
        self.accepting = True
        """False once the server drains: every new connection is dropped (and counted in `refused`)."""
        self.start_timeouts = 0
        """Connections closed for not finishing start-up within handshake_timeout."""
        self._drain_sock: socket.socket | None = None
        self._burst = Burst()

    @property
    def live(self) -> int:
        """Connections holding a slot."""
        return sum(self.per_address.values())

    def close(self) -> None:
        """Close every connection and the socket, and stop taking forwarded datagrams."""
        if self.workers is not None:
            self.workers.close()
        super().close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._drain_sock = drainable_socket(transport)

    def datagram_received(self, data: bytes | str, addr: Any) -> None:
        """One datagram, then whatever else the socket holds (drain.py): one loop turn per burst, and each
        connection handles the events of its datagrams in the burst once, after the last (Burst)."""
        burst = self._burst
        burst.open = True
        try:
            self._one_datagram(data, addr)
            if self._drain_sock is not None:
                drain(self._drain_sock, self._one_datagram, self.error_received)
        finally:
            burst.close()

    def _one_datagram(self, data: bytes | str, addr: Any) -> None:
        assert isinstance(data, bytes)
        group = self.workers
        if group is not None and data and not data[0] & 0x80:  # a short header: is it another worker's?
            cid = data[1:1 + group.cid_length]
            if not self.knows(cid):
                owner = group.owner(cid)
                if owner is not None:
                    group.forward(owner, data, addr)
                    return
        self._own_datagram(data, addr)

    def forwarded_datagram(self, data: bytes, addr: Any) -> None:
        """A datagram another worker read for one of this worker's connections (never forwarded again).

        Only a short-header packet for a connection this worker holds is taken (workers.unpack_forwarded
        refused the rest of the frame): a forwarded packet never opens a connection or reaches aioquic's
        version negotiation."""
        group = self.workers
        assert group is not None
        if data[0] & 0x80 or not self.knows(data[1:1 + group.cid_length]):
            group.dropped += 1
            return
        self._own_datagram(data, addr)

    def _own_datagram(self, data: bytes, addr: Any) -> None:
        host = str(addr[0])
        if self.opens_connection(data) and (
            not self.accepting
            or self.per_address.get(host, 0) >= self._settings.max_connections_per_address
            or self.live >= self._settings.max_connections
        ):
            self.refused += 1
            return
        self._addr = host
        super().datagram_received(data, addr)

    def _create(self, quic: Any, stream_handler: Any = None) -> Any:
        protocol = self._inner_create(quic, stream_handler=stream_handler)
        if self.workers is not None and isinstance(protocol, AqueductProtocol):
            protocol.quic.tag_connection_ids(self.workers.worker)  # before aioquic files it under its first ID
        # aioquic files it under the client's chosen ID and its own first one right after this returns
        self.file_connection(protocol, quic.host_cid)
        host = self._addr
        self.per_address[host] = self.per_address.get(host, 0) + 1
        loop = asyncio.get_running_loop()
        deadline = loop.call_later(self._settings.handshake_timeout, self._check_started, protocol)

        def release(_: object) -> None:
            deadline.cancel()
            left = self.per_address.get(host, 0) - 1
            if left > 0:
                self.per_address[host] = left
            else:
                self.per_address.pop(host, None)

        if isinstance(protocol, AqueductProtocol):
            protocol.burst = self._burst
            protocol.terminated.add_done_callback(release)
        return protocol

    def _check_started(self, protocol: AqueductProtocol) -> None:
        if protocol.terminated.done():
            return
        engine = protocol.engine
        if engine is None or engine.entrypoint is None:  # (a server's entrypoint: headers came and were accepted)
            self.start_timeouts += 1
            protocol.close_connection(
                CloseCode.LIMIT_EXCEEDED, f"handshake and headers not done within {self._settings.handshake_timeout} s"
            )

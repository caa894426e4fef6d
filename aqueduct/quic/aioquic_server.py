"""aioquic's QuicServer with its connection-ID table behind named members: the door `limits.py` goes through.

One of the doors to aioquic's private state (ARCHITECTURE.md; tests/architecture/test_aioquic_stays_in_quic.py).
aioquic's server keeps its connections in a private table from connection ID to protocol (`_protocols`),
its configuration in `_configuration`, and is told of IDs issued and retired and of a connection's end
through private methods. `AioquicServer` names what the admission rules (limits.py) and the workers'
forwarding (workers.py) need:

- `knows(cid)`: whether a connection ID is one of this server's connections;
- `opens_connection(data)`: whether aioquic would create a connection for a datagram (its own test: a
  full-size Initial for an unknown connection ID), remembering that ID for `file_connection`;
- `file_connection(protocol)`: called as a connection is created, before aioquic files it under the
  client's chosen ID and its own first one.

Termination costs O(1) per connection (its own IDs), not aioquic's scan of every connection ID of every
connection: `_ids` keeps each connection's IDs beside aioquic's table (the first two filed when the
connection is made, then each issued and retired one), so connections ending together (a mass idle expiry)
cost time linear in their number.
"""

from __future__ import annotations

from typing import Any

from aioquic._buffer import Buffer
from aioquic.asyncio.server import QuicServer
from aioquic.quic.configuration import SMALLEST_MAX_DATAGRAM_SIZE
from aioquic.quic.packet import QuicPacketType, pull_quic_header


class AioquicServer(QuicServer):
    """aioquic's QuicServer with its connection table named and kept with its reverse (see the module comment)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._ids: dict[Any, set[bytes]] = {}
        """Each connection's IDs in aioquic's table `_protocols` (the reverse of that table)."""
        self._opening_cid = b""

    @property
    def cid_length(self) -> int:
        """The length of the connection IDs this server issues."""
        return int(self._configuration.connection_id_length)

    def knows(self, cid: bytes) -> bool:
        """Whether `cid` is a connection ID of one of this server's connections."""
        return cid in self._protocols

    def opens_connection(self, data: bytes) -> bool:
        """Whether aioquic would create a connection for this datagram (its own test)."""
        if len(data) < SMALLEST_MAX_DATAGRAM_SIZE:
            return False
        try:
            header = pull_quic_header(Buffer(data=data), host_cid_length=self._configuration.connection_id_length)
        except ValueError:
            return False
        self._opening_cid = header.destination_cid
        return header.packet_type == QuicPacketType.INITIAL and header.destination_cid not in self._protocols

    def file_connection(self, protocol: Any, host_cid: bytes) -> None:
        """A connection is being created for the datagram `opens_connection` last saw: keep its first two IDs
        (the client's chosen one, and `host_cid`, ours) for its termination."""
        self._ids[protocol] = {self._opening_cid, host_cid}

    def close(self) -> None:
        """Close every connection and the socket."""
        super().close()
        self._ids.clear()

    # ---- aioquic's connection-ID table, kept with its reverse ----
    def _connection_id_issued(self, cid: bytes, protocol: Any) -> None:
        super()._connection_id_issued(cid, protocol=protocol)
        self._ids.setdefault(protocol, set()).add(cid)

    def _connection_id_retired(self, cid: bytes, protocol: Any) -> None:
        super()._connection_id_retired(cid, protocol=protocol)
        self._ids.get(protocol, set()).discard(cid)

    def _connection_terminated(self, protocol: Any) -> None:
        """Remove the connection's own IDs (aioquic scans the whole table here: O(n) per connection)."""
        table = self._protocols
        for cid in self._ids.pop(protocol, ()):
            if table.get(cid) is protocol:
                del table[cid]

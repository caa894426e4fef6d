"""Connection termination on the server costs O(1) per connection, not a scan of every connection ID.

aioquic's QuicServer finds a terminated connection's IDs by scanning its whole ID table, so N connections
ending together cost O(N^2) (issue 26 item 9: 2,500 vanished clients burnt ~53 s of CPU). LimitedQuicServer
keeps each connection's IDs beside the table; the test counts the table entries a termination examines."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aqueduct.quic.certs import make_dev_certs
from aqueduct.quic.limits import LimitedQuicServer
from aqueduct.quic.settings import TransportSettings, server_configuration


class CountingDict(dict[bytes, Any]):
    """A connection-ID table that counts every entry anything looks at."""

    examined = 0

    def items(self) -> Any:
        for kv in super().items():
            CountingDict.examined += 1
            yield kv

    def values(self) -> Any:
        for v in super().values():
            CountingDict.examined += 1
            yield v

    def __iter__(self) -> Iterator[bytes]:
        for k in super().__iter__():
            CountingDict.examined += 1
            yield k

    def get(self, key: bytes, default: Any = None) -> Any:
        CountingDict.examined += 1
        return super().get(key, default)

    def __getitem__(self, key: bytes) -> Any:
        CountingDict.examined += 1
        return super().__getitem__(key)

    def __delitem__(self, key: bytes) -> None:
        CountingDict.examined += 1
        super().__delitem__(key)


class FakeProtocol:
    pass


def test_terminating_n_connections_examines_o_n_table_entries(tmp_path: Path) -> None:
    async def scenario() -> None:
        certs = make_dev_certs(tmp_path)
        settings = TransportSettings()
        server = LimitedQuicServer(settings=settings, create_protocol=FakeProtocol,
                                   configuration=server_configuration(settings, cert=certs.cert, key=certs.key))
        table = CountingDict()
        server._protocols = table
        n, ids = 400, 9  # aioquic keeps 8 issued IDs and the client's original one per connection
        protocols = [FakeProtocol() for _ in range(n)]
        for p in protocols:
            for _ in range(ids):
                server._connection_id_issued(os.urandom(8), protocol=p)
        retired = next(k for k in table if server._protocols[k] is protocols[0])
        server._connection_id_retired(retired, protocol=protocols[0])
        CountingDict.examined = 0
        for p in protocols:
            server._connection_terminated(protocol=p)
        assert not table
        assert CountingDict.examined <= 3 * n * ids, f"{CountingDict.examined} entries examined for {n} connections"

    asyncio.run(scenario())


def test_a_terminated_connection_removes_its_ids_and_no_others(tmp_path: Path) -> None:
    async def scenario() -> None:
        certs = make_dev_certs(tmp_path)
        settings = TransportSettings()
        server = LimitedQuicServer(settings=settings, create_protocol=FakeProtocol,
                                   configuration=server_configuration(settings, cert=certs.cert, key=certs.key))
        a, b = FakeProtocol(), FakeProtocol()
        for cid, p in ((b"a1", a), (b"a2", a), (b"b1", b)):
            server._connection_id_issued(cid, protocol=p)
        server._connection_id_retired(b"a1", protocol=a)
        server._connection_terminated(protocol=a)
        assert server._protocols == {b"b1": b}
        server._connection_terminated(protocol=b)
        server._connection_terminated(protocol=b)  # twice: nothing left, nothing fails
        assert server._protocols == {}

    asyncio.run(scenario())


def test_real_connections_leave_no_ids_behind(tmp_path: Path) -> None:
    """Over real connections (IDs issued and retired as a migrating client makes them), everything filed under
    a connection leaves the table when it ends."""
    import aqueduct
    from aqueduct.api.connection import link_of
    from aqueduct.quic.endpoint import rebind

    async def scenario() -> None:
        certs = make_dev_certs(tmp_path)
        async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, codec=aqueduct.RawCodec()) as srv:
            url = f"aqueduct://127.0.0.1:{srv.address[1]}"
            conns = [await aqueduct.connect(url, ca=certs.ca, codec=aqueduct.RawCodec()) for _ in range(4)]
            for conn in conns[:2]:
                await rebind(link_of(conn).protocol)  # a fresh connection ID: the server retires the old
            await asyncio.wait_for(asyncio.gather(*(c.entrypoint.send(aqueduct.RawMessage(b"x")) for c in conns)),
                                   20)
            server = srv.admission
            assert len(server._ids) == 4
            for ids in server._ids.values():
                assert ids and all(cid in server._protocols for cid in ids)
            for conn in conns:
                await conn.close()
            async with asyncio.timeout(20):
                while server._protocols or server._ids:
                    await asyncio.sleep(0.02)  # aioquic ends the server side after its draining period

    asyncio.run(scenario())

"""Workers sharing one UDP port (quic/workers.py): tagged connection IDs, and a client whose address changes
keeps its connection and channels though its packets now reach another worker, which hands them over."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.api.echo import echo_connection
from aqueduct.quic.certs import DevCerts, make_dev_certs
from aqueduct.quic.endpoint import rebind
from aqueduct.quic.workers import WorkerGroup, pack_forwarded, tag_cid, unpack_forwarded

GUARD = 20.0
"""Upper bound on any single wait: a failure guard, never a synchronisation."""


@contextlib.asynccontextmanager
async def echo_workers(certs: DevCerts, n: int) -> AsyncIterator[tuple[int, list[aqueduct.Server[Any]]]]:
    """`n` echo servers on one port in this process (SO_REUSEPORT spreads datagrams over their sockets as
    over processes); yields (port, servers)."""
    async with contextlib.AsyncExitStack() as stack:
        servers: list[aqueduct.Server[Any]] = []
        port = 0
        for i in range(n):
            server = await stack.enter_async_context(aqueduct.serve(
                "127.0.0.1", port, cert=certs.cert, key=certs.key, codec=aqueduct.RawCodec(), workers=n, worker=i))
            port = server.address[1]
            servers.append(server)
        tasks: set[asyncio.Task[Any]] = set()

        async def accept(server: aqueduct.Server[Any]) -> None:
            async for conn in server:
                tasks.add(asyncio.ensure_future(echo_connection(conn)))

        acceptors = [asyncio.ensure_future(accept(s)) for s in servers]
        try:
            yield port, servers
        finally:
            for t in [*acceptors, *tasks]:
                t.cancel()


async def _ping(tx: aqueduct.Sender[Any], payload: bytes) -> bytes:
    reply_tx, reply_rx = aqueduct.channel()
    await tx.send(aqueduct.RawMessage(payload, [reply_tx]))
    got = await asyncio.wait_for(reply_rx.recv(), GUARD)
    return bytes(got.data)


def test_a_client_whose_address_changes_keeps_its_channels_when_another_worker_reads_its_packets(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        certs = make_dev_certs(tmp_path)
        async with echo_workers(certs, 2) as (port, servers):
            conn = await aqueduct.connect(f"aqueduct://127.0.0.1:{port}", ca=certs.ca, codec=aqueduct.RawCodec())
            tx, rx = aqueduct.channel()
            await conn.entrypoint.send(aqueduct.RawMessage(b"serve this", [rx]))  # a long-lived echo channel
            assert await _ping(tx, b"before") == b"before"
            (owner,) = [i for i, s in enumerate(servers) if s.connections]
            other = 1 - owner
            groups = [s.admission.workers for s in servers]
            protocol = link_of(conn).protocol
            for cid in protocol.quic._peer_cid_available:  # every ID the owner issued names it
                assert cid.cid[0] == owner
            moves = 0
            while groups[other].forwarded == 0:  # each new address hashes to either socket
                moves += 1
                assert moves <= 60, "no new address reached the other worker"
                await rebind(protocol)
                assert await _ping(tx, b"move %d" % moves) == b"move %d" % moves
            assert groups[owner].received >= 1 and groups[owner].dropped == groups[other].dropped == 0
            for i in range(5):  # the channel goes on over the new path, through the other worker
                assert await _ping(tx, b"after %d" % i) == b"after %d" % i
            assert servers[owner].connections and not servers[other].connections
            assert not conn.is_closed
            await conn.close()

    asyncio.run(asyncio.wait_for(scenario(), 4 * GUARD))


def test_each_connection_lives_on_the_worker_its_first_packet_reached_and_ids_name_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        certs = make_dev_certs(tmp_path)
        async with echo_workers(certs, 2) as (port, servers):
            conns = [await aqueduct.connect(f"aqueduct://127.0.0.1:{port}", ca=certs.ca, codec=aqueduct.RawCodec())
                     for _ in range(12)]
            for conn in conns:
                tx, rx = aqueduct.channel()
                await conn.entrypoint.send(aqueduct.RawMessage(b"", [rx]))
                assert await _ping(tx, b"x") == b"x"
            assert sum(len(s.connections) for s in servers) == 12
            for i, server in enumerate(servers):
                for cid in server.admission._protocols:
                    if len(cid) == 8 and server.admission._protocols[cid].quic.host_cid == cid:
                        assert cid[0] == i
            assert all(s.admission.workers.forwarded == 0 for s in servers)
            for conn in conns:
                await conn.close()

    asyncio.run(asyncio.wait_for(scenario(), 4 * GUARD))


def test_forwarding_frames_and_ownership() -> None:
    for addr, ipv6 in ((("127.0.0.1", 4433), False), (("::1", 65535, 0, 0), True)):
        back, data = unpack_forwarded(pack_forwarded(addr, b"\x40datagram"), ipv6)
        assert back == addr and data == b"\x40datagram"
    group = WorkerGroup(1, 3, 8)
    assert group.owner(tag_cid(0, 8)) == 0 and group.owner(tag_cid(2, 8)) == 2
    assert group.owner(tag_cid(1, 8)) is None  # its own
    assert group.owner(tag_cid(3, 8)) is None and group.owner(tag_cid(0, 4)) is None  # not the group's
    for bad in ((0, 1), (1, 0), (2, 2), (0, 257)):
        with pytest.raises(ValueError):
            WorkerGroup(*bad, 8)


def test_a_second_group_cannot_take_a_workers_place(tmp_path: Path) -> None:
    """The forwarding socket is bound exclusively: a second worker 0 on the same port fails to start."""
    async def scenario() -> None:
        certs = make_dev_certs(tmp_path)
        async with echo_workers(certs, 2) as (port, _):
            with pytest.raises(OSError):
                async with aqueduct.serve("127.0.0.1", port, cert=certs.cert, key=certs.key, workers=2, worker=0):
                    pass

    asyncio.run(asyncio.wait_for(scenario(), 2 * GUARD))

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
        port, directory = 0, None
        for i in range(n):
            server = await stack.enter_async_context(aqueduct.serve(
                "127.0.0.1", port, cert=certs.cert, key=certs.key, codec=aqueduct.RawCodec(), workers=n, worker=i,
                worker_dir=directory))
            port, directory = server.address[1], server.worker_dir
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
        assert unpack_forwarded(pack_forwarded(addr, b"\x40datagram"), ipv6) == (addr, b"\x40datagram")
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


def test_forwarding_frames_are_validated_strictly() -> None:
    good = pack_forwarded(("127.0.0.1", 4433), b"\x40datagram")
    assert unpack_forwarded(good, ipv6=False) is not None
    assert unpack_forwarded(good, ipv6=True) is None  # another family than the socket's
    assert unpack_forwarded(pack_forwarded(("::1", 4433, 0, 0), b"\x40x"), ipv6=False) is None
    assert unpack_forwarded(pack_forwarded(("127.0.0.1", 0), b"\x40x"), ipv6=False) is None  # port 0
    assert unpack_forwarded(pack_forwarded(("127.0.0.1", 4433), b"\xc0initial"), ipv6=False) is None  # long header
    assert unpack_forwarded(pack_forwarded(("127.0.0.1", 4433), b""), ipv6=False) is None  # no datagram
    for junk in (b"", b"\x04", good[:7], b"\x05" + good[1:], b"\x0a127.0.0.1\x00\x11\x51\x40xx"):
        assert unpack_forwarded(junk, ipv6=False) is None


def test_the_workers_directory_must_be_a_private_directory_of_ours(tmp_path: Path) -> None:
    """A worker given a directory another user could reach (or swap) refuses to start."""
    import os
    import stat

    from aqueduct.errors import ConfigError
    from aqueduct.quic.workers import check_directory, new_directory

    made = new_directory()
    try:
        assert stat.S_IMODE(made.stat().st_mode) == 0o700 and made.stat().st_uid == os.geteuid()
        check_directory(made)
    finally:
        made.rmdir()
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o755)
    open_dir.chmod(0o755)
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(made.parent)
    cases = [(open_dir, "mode 755"), (link, "not a directory"), (tmp_path / "missing", "No such file")]
    if os.geteuid() == 0:
        os.chown(theirs, 65534, 65534)
        cases.append((theirs, "belongs to uid 65534"))
    for directory, why in cases:
        with pytest.raises(ConfigError, match=why):
            check_directory(directory)

    async def scenario() -> None:
        certs = make_dev_certs(tmp_path)
        for directory in (None, open_dir):
            with pytest.raises(ConfigError):
                async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, workers=2, worker=1,
                                          worker_dir=directory):
                    pass

    asyncio.run(asyncio.wait_for(scenario(), GUARD))


def test_a_worker_started_twice_fails_clearly_and_the_directory_goes_with_worker_0(tmp_path: Path) -> None:
    from aqueduct.errors import ConfigError

    async def scenario() -> None:
        certs = make_dev_certs(tmp_path)
        async with echo_workers(certs, 2) as (port, servers):
            directory = servers[0].worker_dir
            assert directory is not None and sorted(p.name for p in directory.iterdir()) == ["worker-0", "worker-1"]
            with pytest.raises(ConfigError, match="worker 1 of this group already runs"):
                async with aqueduct.serve("127.0.0.1", port, cert=certs.cert, key=certs.key, workers=2, worker=1,
                                          worker_dir=directory):
                    pass
        assert not directory.exists()

    asyncio.run(asyncio.wait_for(scenario(), 2 * GUARD))


def test_malformed_and_long_header_frames_in_the_inbox_are_dropped_and_clients_still_served(tmp_path: Path) -> None:
    """Even from a sender allowed into the directory (root here): a NUL host, a wrong family, port 0, an Initial,
    a packet for no connection of the worker: each dropped and counted; no answer goes out, the UDP sockets
    stay open and new clients are served."""
    import socket
    import struct

    from aqueduct.quic.workers import socket_path

    async def scenario() -> None:
        certs = make_dev_certs(tmp_path)
        async with echo_workers(certs, 2) as (port, servers):
            trap = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            trap.bind(("127.0.0.3", 0))
            trap.setblocking(False)
            tport = trap.getsockname()[1]
            initial = b"\xc0\x00\x00\x00\x01\x08" + bytes(8) + b"\x00" + bytes(1200)
            frames = [
                struct.pack("!B", 10) + b"127.0.0.1\x00" + struct.pack("!H", port) + b"\x40" + bytes(30),
                pack_forwarded(("::1", tport, 0, 0), b"\x40" + bytes(30)),
                pack_forwarded(("127.0.0.3", 0), b"\x40" + bytes(30)),
                pack_forwarded(("127.0.0.3", tport), initial),
                pack_forwarded(("127.0.0.3", tport), b"\x40" + bytes((0,)) + bytes(40)),  # worker 0's tag, no such ID
            ]
            directory = servers[0].worker_dir
            assert directory is not None
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
                for frame in frames:
                    s.sendto(frame, str(socket_path(directory, 0)))
            group = servers[0].admission.workers
            async with asyncio.timeout(GUARD):
                while group.dropped < len(frames):
                    await asyncio.sleep(0.01)
            assert group.dropped == len(frames) and group.received == 1  # the last frame was well formed
            for i in range(3):
                async with aqueduct.connect(f"aqueduct://127.0.0.1:{port}", ca=certs.ca, codec=aqueduct.RawCodec()) \
                        as conn:
                    assert await _ping(conn.entrypoint, b"%d" % i) == b"%d" % i
            with pytest.raises(BlockingIOError):
                trap.recvfrom(65536)  # (the clients' round trips went after the frames: nothing was answered)
            trap.close()

    asyncio.run(asyncio.wait_for(scenario(), 4 * GUARD))

"""Real QUIC through the seeded impairment proxy: nothing promised is lost, nothing is delivered twice, no hangs.

Client and server run in this process with the library's ImpairProxy (aqueduct.testing.impair)
between them (loss, loss bursts, duplication, reordering, jitter). Every
channel is recorded by a TrafficLog and checked by the one ledger (see tests/harness/traffic.py):
reliable messages exactly once (in order when ordered), unreliable ones at
most once, and the sender's acks/nacks equal to what the receiving
application got. A blackout longer than the idle timeout must end every
open handle on both sides with ConnectionLost.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from harness.traffic import TrafficLog, TrafficShape, TreeTraffic

import aqueduct
from aqueduct import ConnectionLost, Delivery
from aqueduct.api.connection import link_of
from aqueduct.api.halves.wiring import open_handle
from aqueduct.errors import EndReason
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.settings import TransportSettings
from aqueduct.testing.impair import Impairment, ImpairProxy

from .hostile import GUARD, until

SETTINGS = TransportSettings(idle_timeout=3.0, keepalive=0.5, handshake_timeout=10.0)


def impairment(loss: float) -> Impairment:
    """Loss with bursts, plus duplication, reordering and jitter."""
    return Impairment(loss=loss, burst_enter=loss / 10, duplicate=0.02, reorder=0.05, reorder_delay=0.004,
                      delay=0.001, jitter=0.002)


@contextlib.asynccontextmanager
async def lossy(certs: DevCerts, loss: float, seed: int) -> AsyncIterator[tuple[Any, ...]]:
    """(client connection, server connection list, proxy, log, traffic) over an impaired path."""
    log = TrafficLog()
    traffic = TreeTraffic(log, seed, TrafficShape(max_messages=6, max_depth=2, guard=GUARD))
    server_conns: list[aqueduct.Connection] = []
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, settings=SETTINGS) as server:
        async def accept() -> None:
            async for sconn in server:
                log.tap(sconn)
                server_conns.append(sconn)
                entry_tasks.add(asyncio.ensure_future(traffic.serve_entry(sconn.entrypoint)))

        entry_tasks: set[asyncio.Task[None]] = set()
        acceptor = asyncio.ensure_future(accept())
        proxy = await ImpairProxy.start(server.address, up=impairment(loss), down=impairment(loss), seed=seed)
        try:
            conn = await aqueduct.connect(f"aqueduct://127.0.0.1:{proxy.address[1]}", ca=certs.ca, settings=SETTINGS,
                                          connect_timeout=SETTINGS.handshake_timeout)
            log.tap(conn)
            try:
                yield conn, server_conns, proxy, log, traffic
            finally:
                await conn.close(timeout=1.0)
        finally:
            acceptor.cancel()
            for task in entry_tasks:
                task.cancel()
            proxy.close()


@pytest.mark.parametrize(("loss", "seed"), [(0.05, 11), (0.20, 12)])
async def test_random_trees_lose_nothing_under_loss(certs: DevCerts, loss: float, seed: int) -> None:
    async with lossy(certs, loss, seed) as (conn, _, proxy, log, traffic):
        for _ in range(4):  # waves, so the traffic spans many packets (and so many loss decisions)
            for _ in range(25):
                await traffic.root(conn.entrypoint)
            await until(lambda: not traffic.tasks, "every channel end finished")
        orphans = traffic.finalize_orphans()
    print(f"\nFIGURES lossy {loss:.0%}: sent={log.messages_sent} received={log.messages_received} "
          f"channels={log.checked} acks_checked={log.acks_checked} orphans={orphans} ends={log.ends} "
          f"dropped_up={proxy.stats.up.dropped}/{proxy.stats.up.received} "
          f"dropped_down={proxy.stats.down.dropped}/{proxy.stats.down.received} "
          f"duplicated={proxy.stats.up.duplicated + proxy.stats.down.duplicated}")
    assert log.violations == []
    assert log.acks_checked >= 5 and proxy.stats.up.dropped + proxy.stats.down.dropped > 0


@pytest.mark.parametrize(("loss", "seed"), [(0.05, 21), (0.20, 22)])
async def test_one_channel_every_mode_sender_view_matches_receiver(certs: DevCerts, loss: float, seed: int) -> None:
    """100 ordered, 40 unordered and 60 unreliable messages on one channel, then a finish."""
    async with lossy(certs, loss, seed) as (conn, _, _proxy, log, traffic):
        rec = log.new_channel()
        traffic._pending[rec.cid] = 2
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send({"h": [[rec.cid, rx]]})  # the server drains it into the log
        plan = [Delivery.ORDERED] * 100 + [Delivery.UNORDERED] * 40 + [Delivery.UNRELIABLE] * 60
        counts = {True: 0, False: 0}
        for seq, mode in enumerate(plan[i] for i in _interleave(len(plan))):
            reliable = mode is not Delivery.UNRELIABLE
            rec.sent[seq] = (mode, counts[reliable])
            counts[reliable] += 1
            await tx.send({"c": rec.cid, "s": seq, "h": []}, mode=mode)
            if rec.sender_key is None:
                rec.sender_key, rec.sender_conn = (id(link_of(conn)), open_handle(tx)), link_of(conn)
        await tx.finish()
        rec.sender_end = await asyncio.wait_for(tx.ended(), GUARD)
        traffic._done(rec)
        await until(lambda: not traffic.tasks, "the receiver finished and the acks settled")
    got_unreliable = sum(1 for _, d, _ in rec.received if d is Delivery.UNRELIABLE)
    got_reliable = len(rec.received) - got_unreliable
    print(f"\nFIGURES one channel {loss:.0%}: reliable {got_reliable}/{counts[True]} delivered, "
          f"unreliable {got_unreliable}/{counts[False]} delivered, ends {rec.sender_end}/{rec.receiver_end}")
    assert log.violations == []
    assert rec.receiver_end is EndReason.FINISHED and log.acks_checked == 1


def _interleave(n: int) -> list[int]:
    """A fixed shuffle of range(n) that mixes the modes (ordered ones keep their relative order)."""
    return sorted(range(n), key=lambda i: (i * 37) % n)


async def test_blackout_longer_than_idle_timeout_ends_every_handle_with_connection_lost(certs: DevCerts) -> None:
    held: list[Any] = []
    server_ends: list[BaseException | EndReason] = []

    async def handler(sconn: aqueduct.Connection) -> None:
        msg = await sconn.entrypoint.recv()  # keeps the halves open
        held.extend([msg, await msg["out"].recv()])
        outcomes = await asyncio.gather(sconn.entrypoint.recv(), msg["out"].recv(), msg["in"].ended(),
                                        return_exceptions=True)
        server_ends.extend(outcomes)

    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, settings=SETTINGS) as server:
        tasks: set[asyncio.Task[None]] = set()

        async def accept() -> None:
            async for sconn in server:
                tasks.add(asyncio.ensure_future(handler(sconn)))

        acceptor = asyncio.ensure_future(accept())
        proxy = await ImpairProxy.start(server.address, up=impairment(0.05), down=impairment(0.05), seed=31)
        conn = await aqueduct.connect(f"aqueduct://127.0.0.1:{proxy.address[1]}", ca=certs.ca, settings=SETTINGS,
                                          connect_timeout=SETTINGS.handshake_timeout)
        # open handles of every kind on both sides: senders, receivers, the entrypoint
        out_tx, out_rx = aqueduct.channel()
        in_tx, in_rx = aqueduct.channel()
        await conn.entrypoint.send({"out": out_rx, "in": in_tx})
        await out_tx.send("before")
        await until(lambda: len(held) == 2, "the server holds the halves and read 'before'")
        proxy.blackout(SETTINGS.idle_timeout * 2.5)
        results = await asyncio.wait_for(asyncio.gather(
            in_rx.recv(), out_tx.ended(), conn.wait_closed(), *tasks, return_exceptions=True,
        ), GUARD)
        with pytest.raises(ConnectionLost):
            await out_tx.send("after")
        with pytest.raises(ConnectionLost):
            await conn.entrypoint.send("after")
        acceptor.cancel()
        proxy.close()
    print(f"\nFIGURES blackout: client={[type(r).__name__ for r in results[:2]]} server={server_ends}")
    assert held[1] == "before" and isinstance(results[0], ConnectionLost)
    assert results[1] is EndReason.CONNECTION_LOST
    assert isinstance(server_ends[0], ConnectionLost) and isinstance(server_ends[1], ConnectionLost)
    assert server_ends[2] is EndReason.CONNECTION_LOST


async def test_graceful_close_during_a_blackout_gives_up_after_its_timeout(certs: DevCerts) -> None:
    async with lossy(certs, 0.0, 41) as (conn, _, proxy, _ledger, _traffic):
        proxy.blackout(SETTINGS.idle_timeout * 3)
        await asyncio.wait_for(conn.close(timeout=0.5), GUARD)  # no TimeoutError out of close()
        assert link_of(conn).engine.closed

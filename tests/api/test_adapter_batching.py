"""Adapter rules: a reply leaves after the task its request woke ran, carrying the ACK of its request (and so
does the server's answer to the client's headers); the connection's send bound is exact; datagrams are read into
64 KiB buffers."""

from __future__ import annotations

import gc
from dataclasses import replace
from typing import Any

import pytest
from aioquic.quic import connection as aioquic_connection
from aioquic.tls import Epoch

import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.protocol import AqueductProtocol
from aqueduct.quic.settings import TransportSettings
from tests.harness.turns import log_turns

from .conftest import guard, running


def _true_unacked(p: AqueductProtocol) -> int:
    """aioquic's send buffers plus the writes the adapter holds back to coalesce them."""
    return sum(len(s.sender._buffer) for s in p.quic._streams.values()) + p.writes.held_bytes


async def test_a_reply_is_sent_after_the_task_its_request_woke(certs: DevCerts) -> None:
    """Between a request's packet and the handler's reaction no deferred transmit runs, so the reply carries the
    ACK (an aioquic timer due in the same loop turn may still transmit first: those are not counted)."""
    log: list[str] = []

    async def handler(conn: aqueduct.Connection) -> None:
        proto: Any = link_of(conn).protocol
        log_turns(proto, log)
        first = await conn.entrypoint.recv()
        reply = first["reply"]
        async for msg in conn.entrypoint:
            log.append("app")
            await reply.send(msg)

    async with running(certs, handler) as (url, _server), aqueduct.connect(url, ca=certs.ca) as conn:
        reply_tx, reply_rx = aqueduct.channel()
        await conn.entrypoint.send({"reply": reply_tx})
        for i in range(20):
            await conn.entrypoint.send(i)
            assert await guard(reply_rx.recv()) == i
    apps = [i for i, e in enumerate(log) if e == "app"]
    assert len(apps) == 20
    for i in apps:
        before = [e for e in log[:i] if e != "app"]
        assert before[-1] == "rx", log[max(0, i - 6) : i + 1]


async def test_closing_or_dropping_an_ended_half_schedules_no_transmit(certs: DevCerts) -> None:
    """What follows each fresh-oneshot request (its ended reply receiver closed, its halves collected) writes
    nothing, so it schedules no transmit: one queued for nothing runs ahead of a task that a packet read in the
    same loop turn woke, and sends that packet's consequences (the next reply channel's ChannelControl) in a
    packet of their own, before the task's answer."""

    async def handler(conn: aqueduct.Connection) -> None:
        async for req in conn.entrypoint:
            await req["reply"].send(req["n"])

    async with running(certs, handler) as (url, _server), aqueduct.connect(url, ca=certs.ca) as conn:
        link = link_of(conn)
        proto: Any = link.protocol
        tx, rx = aqueduct.oneshot()
        await conn.entrypoint.send({"n": 1, "reply": tx})
        assert await guard(rx.recv()) == 1
        assert link.engine.state_sizes()["receivers"] == 1  # ended (finished), not yet forgotten
        proto.transmit()  # (what the reply's arrival wrote goes now: nothing is scheduled after this)
        assert proto._transmit_task is None
        rx.close()
        assert proto._transmit_task is None
        del rx, tx
        gc.collect()
        link.drops.run()
        assert proto._transmit_task is None
        assert link.engine.state_sizes()["receivers"] == 0


async def test_the_connection_bound_is_exact_though_its_count_is_only_an_upper_bound(certs: DevCerts) -> None:
    limit = 20_000
    got = 0

    async def handler(conn: aqueduct.Connection) -> None:
        nonlocal got
        async for _ in conn.entrypoint:
            got += 1

    settings = replace(TransportSettings(), connection_send_buffer=limit)
    async with (
        running(certs, handler) as (url, _server),
        aqueduct.connect(url, ca=certs.ca, settings=settings) as conn,
    ):
        p = link_of(conn).protocol
        sent = 0
        with pytest.raises(aqueduct.WouldBlock):
            while True:  # one loop turn: no packet is processed, only our writes move the count
                conn.entrypoint.try_send(b"x" * 500)
                sent += 1
                assert p.writes.unacked_upper >= _true_unacked(p)
                assert p.connection_blocked() == (_true_unacked(p) >= limit)
        assert p.connection_blocked() and _true_unacked(p) >= limit
        await guard(p.wait_while(lambda: _true_unacked(p) > 0))  # acks arrive: buffers shrink, the bound stays
        assert p.writes.unacked_upper >= limit
        assert not p.connection_blocked()
        assert p.unacked_total() == p.writes.unacked_upper == 0  # (the check replaced the bound by the sum)
        reply_tx, _reply_rx = aqueduct.channel()
        await conn.entrypoint.send({"ping": reply_tx})
    assert got == sent + 1


async def test_an_answer_carries_the_ack_of_its_request(certs: DevCerts) -> None:
    """With aioquic's ACK delay raised to an hour on the server, only piggybacked ACKs acknowledge the client's
    requests: each answer must carry one, so no packet the client sent up to its request is still unacked."""

    async def handler(conn: aqueduct.Connection) -> None:
        link_of(conn).protocol.quic._ack_delay = 3600.0
        first = await conn.entrypoint.recv()
        async with first["reply"] as reply:
            async for msg in conn.entrypoint:
                await reply.send(msg)

    async with running(certs, handler) as (url, _server), aqueduct.connect(url, ca=certs.ca) as conn:
        reply_tx, reply_rx = aqueduct.channel()
        await conn.entrypoint.send({"reply": reply_tx})
        quic = link_of(conn).protocol.quic
        for i in range(10):
            first_of_request = quic._packet_number
            await conn.entrypoint.send(i)
            assert await guard(reply_rx.recv()) == i
            unacked = quic._spaces[Epoch.ONE_RTT].sent_packets
            assert all(n > first_of_request for n in unacked), (i, first_of_request, list(unacked))


async def test_datagrams_are_read_into_64_kib_buffers(certs: DevCerts) -> None:
    """stdlib asyncio reads into 256 KiB, which glibc serves with mmap: three system calls per datagram."""

    async def handler(conn: aqueduct.Connection) -> None:
        await conn.entrypoint.recv()

    async with running(certs, handler) as (url, server), aqueduct.connect(url, ca=certs.ca) as conn:
        client_transport: Any = link_of(conn).protocol._transport
        server_transport: Any = server.admission._transport
        assert client_transport.max_size == server_transport.max_size == 65536


async def test_the_servers_headers_carry_the_ack_of_the_clients(
    certs: DevCerts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With aioquic's ACK delay raised to an hour at both ends only piggybacked ACKs acknowledge anything: the
    server's reply to the client's headers (written by its engine, not by an application call) carries the ACK
    of the client's headers packet, so once `connect` returns the client's headers are acknowledged (an ACK-only
    packet used to follow that reply a millisecond later)."""
    monkeypatch.setattr(aioquic_connection, "K_GRANULARITY", 3600.0)  # (read only as a new connection's ACK delay)

    async def handler(conn: aqueduct.Connection) -> None:
        await conn.entrypoint.recv()

    async with running(certs, handler) as (url, _server), aqueduct.connect(url, ca=certs.ca) as conn:
        quic = link_of(conn).protocol.quic
        assert quic._ack_delay == 3600.0
        assert len(quic._streams[0].sender._buffer) == 0  # (stream 0 holds what is unacknowledged of the headers)

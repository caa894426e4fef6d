"""Token authentication against a live server: `serve(authenticate=cb)` sees the client's headers (and certificate
identity) before anything else of the client is processed; a refused client is closed with AUTHENTICATION_FAILED
before its entrypoint is handed over, and 0-RTT messages wait until the callback accepted."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import aqueduct
from aqueduct import CloseCode
from aqueduct.api.connection import link_of
from aqueduct.bench.clients import WaitableTickets
from aqueduct.metrics import Metrics
from aqueduct.quic.certs import DevCerts, make_client_cert
from aqueduct.quic.mtls import PeerIdentity
from aqueduct.wire.headers import Headers

from .conftest import guard, running


async def by_token(headers: Headers, identity: PeerIdentity | None) -> str:
    token = dict(headers).get("authorization")
    if token != b"Bearer sesame":
        raise aqueduct.AuthenticationFailed("unknown token")
    return "alice"


def collector() -> tuple[list[tuple[Any, Any]], asyncio.Queue[Any], Any]:
    seen: list[tuple[Any, Any]] = []
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def handler(conn: aqueduct.Connection) -> None:
        async for msg in conn.entrypoint:
            seen.append((conn.identity, msg))
            queue.put_nowait(msg)

    return seen, queue, handler


async def test_an_accepted_client_is_served_as_its_identity(certs: DevCerts) -> None:
    seen, queue, handler = collector()
    async with running(certs, handler, authenticate=by_token) as (url, _server):
        async with aqueduct.connect(url, ca=certs.ca, headers={"authorization": "Bearer sesame"}) as conn:
            await conn.entrypoint.send("hello")
            assert await guard(queue.get()) == "hello"
    assert seen == [("alice", "hello")]


async def test_a_refused_client_is_closed_with_code_9_before_its_entrypoint_is_handed_over(certs: DevCerts) -> None:
    seen, _queue, handler = collector()
    metrics = Metrics()
    async with running(certs, handler, authenticate=by_token, metrics=metrics) as (url, server):
        with pytest.raises(aqueduct.AuthenticationFailed, match="unknown token") as err:
            await guard(aqueduct.connect(url, ca=certs.ca, headers={"authorization": "Bearer guess"}))
        assert err.value.code == CloseCode.AUTHENTICATION_FAILED == 9
        with pytest.raises(aqueduct.AuthenticationFailed, match="unknown token"):
            await guard(aqueduct.connect(url, ca=certs.ca))  # no header at all
        assert server._queue.empty()
    assert seen == []
    assert metrics.auth_failures._value.get() == 2


async def test_a_failing_callback_refuses_without_telling_why(certs: DevCerts) -> None:
    async def broken(headers: Headers, identity: PeerIdentity | None) -> None:
        raise RuntimeError("database password is hunter2")

    _seen, _queue, handler = collector()
    async with running(certs, handler, authenticate=broken) as (url, _server):
        with pytest.raises(aqueduct.AuthenticationFailed) as err:
            await guard(aqueduct.connect(url, ca=certs.ca))
    assert "hunter2" not in str(err.value) and "authentication failed" in str(err.value)


async def test_the_callback_sees_the_client_certificate(certs: DevCerts) -> None:
    cert, key = make_client_cert(Path(certs.ca).parent, "bob")
    given: list[PeerIdentity | None] = []

    async def by_certificate(headers: Headers, identity: PeerIdentity | None) -> str:
        given.append(identity)
        assert identity is not None
        return identity.subject

    seen, queue, handler = collector()
    async with running(certs, handler, client_ca=certs.ca, authenticate=by_certificate) as (url, _server):
        async with aqueduct.connect(url, ca=certs.ca, cert=cert, key=key) as conn:
            await conn.entrypoint.send(1)
            await guard(queue.get())
    assert seen == [("CN=bob", 1)]
    assert given[0] is not None and given[0].sans == ("bob",)


@pytest.mark.parametrize("accept", [True, False])
async def test_zero_rtt_messages_wait_for_the_callback(certs: DevCerts, accept: bool) -> None:
    """Even where 0-RTT is processed before the handshake (single-use tickets), nothing of the client is processed
    until the callback decided: no receiver exists on the server meanwhile, and a refused client's early message is
    never delivered."""
    asked = asyncio.Event()
    decide: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    calls = 0

    async def slow(headers: Headers, identity: PeerIdentity | None) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            return "first"  # the connection that fetches the ticket
        asked.set()
        if not await decide:
            raise aqueduct.AuthenticationFailed("not today")
        return "early bird"

    seen, queue, handler = collector()
    async with running(certs, handler, authenticate=slow, single_use_tickets=True) as (url, server):
        store = WaitableTickets()
        async with aqueduct.connect(url, ca=certs.ca, session_ticket_store=store):
            await guard(store.arrived.wait())
        conn = await aqueduct.connect(url, ca=certs.ca, session_ticket_store=store)
        assert link_of(conn).protocol.early_data_attempted
        await conn.entrypoint.send("early")  # in the first flight
        await guard(asked.wait())
        (pending,) = [c for c in server.connections if c.identity is None]
        sizes = link_of(pending).engine.state_sizes()
        assert sizes["receivers"] == 0 and sizes["senders"] == 0
        decide.set_result(accept)
        handshake = await guard(link_of(conn).protocol.handshake)
        assert handshake.early_data_accepted
        if accept:
            assert await guard(queue.get()) == "early"
            await conn.close()
            assert seen == [("early bird", "early")]
        else:
            closed = await guard(conn.wait_closed())
            assert closed.error_code == CloseCode.AUTHENTICATION_FAILED and "not today" in closed.reason
            assert seen == []

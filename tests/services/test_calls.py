"""Calls over a real connection: values, streaming results, wrong arguments refused before sending, many
calls in flight, and the server's concurrency bound (callers beyond it wait)."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest

import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.quic.certs import DevCerts
from tests.api.conftest import guard
from tests.harness.turns import log_turns

from .calc import Calc, Calculator
from .conftest import served


async def test_a_call_returns_the_value_and_the_stub_is_the_interface(certs: DevCerts) -> None:
    async with served(certs) as (_, conn, _server):
        calc = conn.service
        assert isinstance(calc, Calculator)
        assert await guard(calc.add(1, 2)) == 3
        assert await guard(calc.add(a=2, b=5)) == 7
        assert await guard(calc.div(1, 4)) == 0.25


async def test_a_streaming_result_is_a_typed_receiver(certs: DevCerts) -> None:
    async with served(certs) as (_, conn, _server):
        got = [i async for i in await guard(conn.service.count(5))]
        assert got == [0, 1, 2, 3, 4]


async def test_a_wrong_argument_raises_validation_error_and_sends_nothing(certs: DevCerts) -> None:
    async with served(certs) as (_, conn, _server):
        sent = conn.stats.messages_sent
        with pytest.raises(aqueduct.ValidationError) as raised:
            await conn.service.add("1", 2)  # type: ignore[arg-type]
        assert raised.value.path == "$.a"
        with pytest.raises(TypeError):
            await conn.service.add(1)  # type: ignore[call-arg]
        assert conn.stats.messages_sent == sent
        assert await guard(conn.service.add(1, 1)) == 2


async def test_many_calls_in_flight_on_one_stub(certs: DevCerts) -> None:
    async with served(certs) as (_, conn, _server):
        results = await guard(asyncio.gather(*(conn.service.add(i, i) for i in range(200))))
        assert results == [2 * i for i in range(200)]


async def test_the_server_runs_at_most_max_concurrent_calls_and_the_rest_wait(certs: DevCerts) -> None:
    async with served(certs, server_kw={"max_concurrent_calls": 2}) as (impl, conn, _server):
        calls = [asyncio.ensure_future(conn.service.wait(f"k{i}")) for i in range(5)]
        first = {await guard(impl.started.get()), await guard(impl.started.get())}
        assert impl.started.empty() and set(impl.running) == first  # the third waits for a slot
        for key in sorted(first):
            impl.running[key].set()
        for _ in range(3):
            key = await guard(impl.started.get())
            impl.running[key].set()
        assert sorted(await guard(asyncio.gather(*calls))) == [f"k{i}" for i in range(5)]


async def test_an_answer_leaves_in_the_loop_turn_its_call_arrived_in(certs: DevCerts) -> None:
    """Between the packet that carries a call and its method no transmit runs on the server, so the answer
    shares a packet with the acknowledgement of the call and the reply channel's control frame: one packet
    each way per call at one in flight (a call started in a new task ran after that transmit: two)."""
    log: list[str] = []

    class Logged(Calc):
        async def add(self, a: int, b: int) -> int:
            log.append("app")
            return a + b

    async with served(certs, Logged()) as (_, conn, server):
        (server_conn,) = server.connections
        proto: Any = link_of(server_conn).protocol
        log_turns(proto, log)
        for i in range(20):
            assert await guard(conn.service.add(i, 1)) == i + 1
    calls = [i for i, what in enumerate(log) if what == "app"]
    assert len(calls) == 20
    for i in calls:
        assert log[i - 1] == "rx", log[max(0, i - 6) : i + 1]


SEEN: contextvars.ContextVar[int] = contextvars.ContextVar("seen")


async def test_each_call_runs_in_a_context_of_its_own(certs: DevCerts) -> None:
    """Calls run in the task that received them until they wait, each in a copy of the dispatcher's context: what
    one call (or an interceptor) sets is not seen by the next, and current_call() is each call's own."""
    leaked: list[int] = []

    class Marking(Calc):
        async def add(self, a: int, b: int) -> int:
            if (before := SEEN.get(None)) is not None:
                leaked.append(before)
            SEEN.set(a)
            assert aqueduct.current_call().args == {"a": a, "b": b}
            return a + b

    async with served(certs, Marking()) as (_, conn, _server):
        for i in range(5):
            assert await guard(conn.service.add(i, 0)) == i
        assert await guard(asyncio.gather(*(conn.service.add(i, 1) for i in range(50)))) == list(range(1, 51))
    assert leaked == []

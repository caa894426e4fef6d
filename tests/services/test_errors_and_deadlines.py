"""Errors, deadlines and cancellation over a real connection: a method's exception reaches the caller as
RemoteError (or as the declared type) and the connection goes on; a caller that gives up (call_options
timeout, asyncio.timeout, cancellation) cancels the method on the server, and both engines go back to idle."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.quic.certs import DevCerts
from tests.api.conftest import guard

from .calc import DivisionByZero
from .conftest import served


def sizes(conn: aqueduct.Connection[Any]) -> dict[str, int]:
    return {k: v for k, v in link_of(conn).engine.state_sizes().items() if k != "timers"}


async def quiet(*conns: aqueduct.Connection[Any]) -> list[dict[str, int]]:
    """The engines' idle sizes once the service channel is open: after one call, when its reply channel is
    forgotten (no links, no acknowledgement ranges held) on both sides."""
    assert await guard(conns[0].service.add(0, 0)) == 0  # type: ignore[attr-defined]

    async def forgotten() -> None:
        while any(sizes(c)["links"] or sizes(c)["ack_ranges"] for c in conns):
            gc.collect()
            await asyncio.sleep(0.01)  # (a poll of a condition, never a stand-in for one)

    await guard(forgotten())
    return [sizes(c) for c in conns]


async def settle(*conns: aqueduct.Connection[Any], idle: list[dict[str, int]]) -> None:
    """Until every engine's tables are back at their idle sizes (bounded by the guard)."""

    async def back() -> None:
        last: list[dict[str, int]] = []
        while (now := [sizes(c) for c in conns]) != idle:
            if now == last:  # nothing moved since the last look: the rest may wait on a collection
                gc.collect()  # (not at every look: with 10,000 objects alive a collection starves the drain)
            last = now
            await asyncio.sleep(0.01)  # (a poll of a condition, never a stand-in for one)

    try:
        await guard(back())
    except TimeoutError:
        raise AssertionError(f"not idle: {[sizes(c) for c in conns]} != {idle}") from None


async def test_an_undeclared_exception_is_a_remote_error_and_the_connection_goes_on(certs: DevCerts) -> None:
    limits = aqueduct.ServiceLimits(send_error_text=True)  # (by default only its type name: test_hostile_calls.py)
    async with served(certs, server_kw={"service_limits": limits}) as (_, conn, _server):
        with pytest.raises(aqueduct.RemoteError) as raised:
            await guard(conn.service.fail("gone"))
        assert (raised.value.type_name, raised.value.remote_message, raised.value.method) == ("KeyError", "'gone'",
                                                                                              "fail")
        assert isinstance(raised.value, aqueduct.AqueductError)
        assert await guard(conn.service.add(2, 2)) == 4


async def test_a_declared_exception_arrives_as_itself(certs: DevCerts) -> None:
    async with served(certs) as (_, conn, _server):
        with pytest.raises(DivisionByZero, match="1 / 0"):
            await guard(conn.service.div(1, 0))


@pytest.mark.parametrize("how", ["call_options", "asyncio.timeout", "cancel"])
async def test_a_caller_giving_up_cancels_the_method_and_leaves_nothing_behind(certs: DevCerts, how: str) -> None:
    async with served(certs) as (impl, conn, server):
        (server_conn,) = server.connections
        idle = await quiet(conn, server_conn)
        if how == "call_options":
            with pytest.raises(aqueduct.Timeout), aqueduct.call_options(timeout=0.3):
                await conn.service.wait("k")
        elif how == "asyncio.timeout":
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.3):
                    await conn.service.wait("k")
        else:
            task = asyncio.ensure_future(conn.service.wait("k"))
            await guard(impl.started.get())
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        assert await guard(impl.cancelled.get()) == "k"  # the server-side task of that call was cancelled
        await settle(conn, server_conn, idle=idle)
        assert await guard(conn.service.add(1, 1)) == 2


async def test_the_deadline_travels_with_the_call(certs: DevCerts) -> None:
    seen: asyncio.Queue[float | None] = asyncio.Queue()

    async def deadline(call: aqueduct.CallInfo, proceed: Any) -> Any:
        seen.put_nowait(None if call.deadline is None else call.deadline - asyncio.get_running_loop().time())
        return await proceed()

    async with served(certs, server_kw={"interceptors": [deadline]}) as (_, conn, _server):
        assert await guard(conn.service.add(1, 2)) == 3
        assert await guard(seen.get()) is None
        with aqueduct.call_options(timeout=30.0):
            assert await guard(conn.service.add(1, 2)) == 3
        left = await guard(seen.get())
        assert left is not None and 0 < left <= 30.0


async def test_a_stub_whose_connection_is_gone_fails_with_connection_lost(certs: DevCerts) -> None:
    async with served(certs) as (_, conn, server):
        calc = conn.service
        for c in list(server.connections):
            await c.close()
        await guard(conn.wait_closed())
        with pytest.raises(aqueduct.ConnectionLost):
            await guard(calc.add(1, 2))


async def test_a_call_waiting_for_its_reply_when_the_connection_goes_fails_with_connection_lost(
        certs: DevCerts) -> None:
    async with served(certs) as (impl, conn, server):
        task = asyncio.ensure_future(conn.service.wait("k"))
        await guard(impl.started.get())
        for c in list(server.connections):
            await c.close()
        with pytest.raises(aqueduct.ConnectionLost):
            await guard(task)


async def test_a_callers_timeout_names_the_method(certs: DevCerts) -> None:
    async with served(certs) as (_, conn, _server):
        with pytest.raises(aqueduct.Timeout, match=r"^Calculator\.wait: no result within 0\.2 s$"), \
                aqueduct.call_options(timeout=0.2):
            await conn.service.wait("k")

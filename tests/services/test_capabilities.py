"""Capabilities over real connections: a service object passed as an argument, a result or a field arrives as
a stub calling back over the same connection; dropping the last stub releases the registration (10,000
passed and dropped, measured); a stub whose connection is gone fails at once; a stub handed to another
connection is served through this process, or refused with ConnectionLost once its own connection is gone."""

from __future__ import annotations

import asyncio
import gc

import pytest

import aqueduct
from aqueduct.quic.certs import DevCerts
from aqueduct.services.dispatch import dispatchers
from tests.api.conftest import guard

from .calc import Calculator, Collect, Listener, Subscription
from .conftest import served
from .test_errors_and_deadlines import quiet, settle, sizes


async def test_a_listener_passed_as_an_argument_calls_back_over_the_same_connection(certs: DevCerts) -> None:
    async with served(certs) as (impl, conn, _server):
        listener = Collect()
        await guard(conn.service.subscribe(listener))
        assert await guard(listener.got.get()) == "subscribed"
        (stub,) = impl.listeners
        assert isinstance(stub, Listener) and not isinstance(stub, Collect)  # a stub of the interface
        await guard(stub.notify("again"))
        assert await guard(listener.got.get()) == "again"


async def test_services_in_fields_and_results_travel_as_capabilities(certs: DevCerts) -> None:
    async with served(certs) as (_, conn, _server):
        a, b = Collect(), Collect()
        assert await guard(conn.service.broadcast([Subscription("x", a), Subscription("y", b)])) == 2
        assert (await guard(a.got.get()), await guard(b.got.get())) == ("x", "y")
        back = await guard(conn.service.echo_listener(a))  # our own listener, back as a stub through the server
        assert isinstance(back, Listener) and back is not a
        await guard(back.notify("round trip"))
        assert await guard(a.got.get()) == "round trip"
        with pytest.raises(aqueduct.ValidationError):
            await conn.service.subscribe(conn.service)  # type: ignore[arg-type]  (a Calculator is no Listener)


async def test_ten_thousand_passed_and_dropped_capabilities_leave_nothing_behind(certs: DevCerts) -> None:
    small = aqueduct.EngineConfig(discarded_filter_size=64)  # (the engines' bounded memory of ended channels)
    async with served(certs, server_kw={"engine_config": small}, engine_config=small) as (_, conn, server):
        (server_conn,) = server.connections
        idle = await quiet(conn, server_conn)
        before = dispatchers()
        gc.collect()
        objects = len(gc.get_objects())
        peak = 0
        for _ in range(100):
            await guard(asyncio.gather(*(conn.service.drop(Collect()) for _ in range(100))))
            peak = max(peak, dispatchers())
        assert peak > before  # (the capabilities were served here while the server held their stubs)
        await settle(conn, server_conn, idle=idle)

        async def released() -> None:
            while dispatchers() != before:
                gc.collect()
                await asyncio.sleep(0.01)  # (a poll of a condition)

        await guard(released())
        gc.collect()
        grown = len(gc.get_objects()) - objects
        print(f"\n10,000 capabilities passed and dropped: dispatchers {before} -> peak {peak} -> {dispatchers()}; "
              f"objects tracked by gc grew by {grown}; client engine {sizes(conn)}, server engine {sizes(server_conn)}")
        assert grown < 2_000  # (a leak of one object per capability would be 10,000)


async def test_a_stub_whose_connection_is_gone_fails_at_once(certs: DevCerts) -> None:
    async with served(certs) as (impl, conn, _server):
        await guard(conn.service.subscribe(Collect()))
        (stub,) = impl.listeners
        await conn.close()
        with pytest.raises(aqueduct.ConnectionLost):
            await guard(stub.notify("anyone?"))


async def test_a_stub_handed_to_another_connection_is_served_through_this_process(certs: DevCerts) -> None:
    async with served(certs) as (_, conn, server):
        host, port = server.address
        async with aqueduct.connect(f"aqueduct://{host}:{port}", ca=certs.ca, service=Calculator) as other:
            mine = Collect()
            stub = await guard(conn.service.echo_listener(mine))  # calls: conn -> server -> conn -> mine
            await guard(other.service.subscribe(stub))  # the server calls it over `other`, we forward over `conn`
            assert await guard(mine.got.get()) == "subscribed"
            await guard(stub.notify("still mine"))  # passing it on did not use it up
            assert await guard(mine.got.get()) == "still mine"
            await conn.close()
            with pytest.raises(aqueduct.ConnectionLost, match="cannot pass this Listener stub on"):
                await guard(other.service.subscribe(stub))
            assert await guard(other.service.add(1, 1)) == 2

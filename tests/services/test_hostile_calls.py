"""Hostile and pathological calls over a real loopback connection (issue 36): numbers a peer sends are checked
before use (a NaN deadline once broke the event loop's timer heap for every connection), call metadata is
bounded, calls that call back do not deadlock on the connection's call slots, a chain of forwarded
capabilities is bounded, exception text is bounded and withheld by default, a reply that cannot be sent still
reaches the caller as RemoteError, and calls queued for a connection that closed are never started.

The raw calls are built as the stub builds them (the method's call struct), with the values a hostile peer
would put there; the stub itself refuses such values before anything is sent (tested here too)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import math
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.api.request import request
from aqueduct.metrics import Metrics
from aqueduct.quic.certs import DevCerts
from aqueduct.services.context import CURRENT, DEFAULT_MAX_CONCURRENT_CALLS, ServiceLimits, service_sizes
from aqueduct.services.dispatch import dispatchers
from aqueduct.services.interface import CallMeta, interface_of
from tests.api.conftest import guard

from .calc import Calc, Calculator, Collect, Listener
from .conftest import served

ADD = interface_of(Calculator).methods["add"]
WAIT = interface_of(Calculator).methods["wait"]
FAIL = interface_of(Calculator).methods["fail"]


def timers_in_order() -> bool:
    """Whether every timer of the running loop has a finite deadline (a NaN one breaks the heap's order)."""
    scheduled = asyncio.get_running_loop()._scheduled  # type: ignore[attr-defined]
    return all(math.isfinite(h.when()) for h in scheduled)


async def raw_call(sender: aqueduct.Sender[Any], method: Any, meta: CallMeta | None, **fields: Any) -> Any:
    """Send `method`'s call struct with `meta` as it is, and return the raw reply (value or error)."""
    return await guard(request(sender, lambda r: method.call(reply=r, meta=meta, **fields)))


@pytest.mark.parametrize("timeout", [math.nan, -5.0, math.inf, -math.inf, 1e308])
async def test_a_deadline_that_is_no_number_of_seconds_is_refused_and_the_loop_unharmed(
        certs: DevCerts, timeout: float) -> None:
    async with served(certs) as (_, conn, _server):
        for method, fields in ((ADD, {"a": 1, "b": 2}), (WAIT, {"key": "k"})):
            reply = await raw_call(conn.entrypoint, method, CallMeta(timeout=timeout), **fields)
            assert reply.error is not None, reply
            assert reply.error.type == "InvalidCall"
            assert "meta.timeout" in reply.error.message and "max_call_timeout" in reply.error.message
            assert timers_in_order()
        assert await guard(conn.service.add(2, 2)) == 4


async def test_the_stub_refuses_a_deadline_that_is_no_number_of_seconds_before_sending() -> None:
    for bad in (math.nan, -1.0, math.inf):
        with pytest.raises(ValueError, match="timeout"), aqueduct.call_options(timeout=bad):
            pass


async def test_a_deadline_over_the_configured_maximum_is_refused(certs: DevCerts) -> None:
    limits = ServiceLimits(max_call_timeout=10.0)
    async with served(certs, server_kw={"service_limits": limits}) as (_, conn, _server):
        reply = await raw_call(conn.entrypoint, ADD, CallMeta(timeout=11.0), a=1, b=2)
        assert reply.error is not None and "max_call_timeout (10.0)" in reply.error.message
        reply = await raw_call(conn.entrypoint, ADD, CallMeta(timeout=9.0), a=1, b=2)
        assert reply.value == 3


@pytest.mark.parametrize(("metadata", "limit"), [
    ({str(i): "" for i in range(100_000)}, "max_metadata_entries"),
    ({"k": "v" * 100_000}, "max_metadata_value_bytes"),
    ({f"k{i}": "v" * 4000 for i in range(30)}, "max_metadata_bytes"),
])
async def test_oversized_call_metadata_is_refused_naming_the_limit(
        certs: DevCerts, metadata: dict[str, str], limit: str) -> None:
    async with served(certs) as (_, conn, server):
        (server_conn,) = server.connections
        reply = await raw_call(conn.entrypoint, WAIT, CallMeta(metadata=metadata), key="k")
        assert reply.error is not None and reply.error.type == "InvalidCall"
        assert limit in reply.error.message
        assert service_sizes(link_of(server_conn))["call_metadata_bytes"] == 0
        gc.collect()  # (nothing of the refused call is held: not its metadata either, while the next is awaited)
        assert not [o for o in gc.get_objects() if type(o) is CallMeta and o.metadata]
        assert await guard(conn.service.add(2, 2)) == 4


async def test_call_metadata_within_the_bounds_is_counted_while_its_call_runs(certs: DevCerts) -> None:
    async with served(certs) as (impl, conn, server):
        (server_conn,) = server.connections
        with aqueduct.call_options(metadata={"who": "me" * 100}):
            task = asyncio.ensure_future(conn.service.wait("k"))
            await guard(impl.started.get())
        held = service_sizes(link_of(server_conn))
        assert held["calls_running"] == 1 and held["call_metadata_bytes"] == len("who") + 200
        impl.running["k"].set()
        assert await guard(task) == "k"
        assert service_sizes(link_of(server_conn)) == {"calls_running": 0, "nested_calls": 0,
                                                       "call_metadata_bytes": 0}


async def test_the_calls_sizes_are_part_of_the_connections_state_sizes_and_its_metric(certs: DevCerts) -> None:
    """`service_sizes` are tables of the connection's `state_sizes()` (beside the engine's) and of the
    `aqueduct_state_size` metric, so an operator sees what a peer's calls hold where the rest is counted."""
    metrics = Metrics()
    async with served(certs, server_kw={"metrics": metrics}) as (impl, conn, server):
        (server_conn,) = server.connections
        link = link_of(server_conn)
        with aqueduct.call_options(metadata={"who": "me" * 100}):
            task = asyncio.ensure_future(conn.service.wait("k"))
            await guard(impl.started.get())
        sizes = link.state_sizes()
        assert sizes["calls_running"] == 1 and sizes["call_metadata_bytes"] == len("who") + 200
        assert sizes["nested_calls"] == 0 and sizes["senders"] == link.engine.state_sizes()["senders"]
        text = metrics.exposition().decode()
        assert 'aqueduct_state_size{table="call_metadata_bytes"} 203.0' in text
        assert 'aqueduct_state_size{table="calls_running"} 1.0' in text
        impl.running["k"].set()
        assert await guard(task) == "k"
        assert link.state_sizes()["call_metadata_bytes"] == 0
        assert 'aqueduct_state_size{table="call_metadata_bytes"} 0.0' in metrics.exposition().decode()


class CallsBack(Listener):
    """A listener whose notify calls the server back (the issue's deadlock)."""

    def __init__(self, calc: Calculator) -> None:
        self.calc = calc
        self.sums = 0

    async def notify(self, text: str) -> None:
        self.sums += await self.calc.add(1, 2)


class Forgetful(Calc):
    async def subscribe(self, listener: Listener) -> None:  # (keeps no stub: the dispatchers can end)
        await listener.notify("subscribed")


async def test_calls_that_call_back_do_not_deadlock_on_the_call_slots(certs: DevCerts) -> None:
    async with served(certs, Forgetful()) as (_, conn, _server):
        listeners = [CallsBack(conn.service) for _ in range(2 * DEFAULT_MAX_CONCURRENT_CALLS)]
        await guard(asyncio.gather(*(conn.service.subscribe(li) for li in listeners)))
        assert all(li.sums == 3 for li in listeners)


async def test_a_chain_of_forwarded_capabilities_is_bounded_by_the_call_depth(certs: DevCerts) -> None:
    async with served(certs) as (_, conn, _server):
        origin = Collect()
        hop: Listener = origin
        for _ in range(10):  # 20 hops: each round trip adds a forwarder on each side
            hop = await guard(conn.service.echo_listener(hop))
        await guard(hop.notify("ten"))
        assert await guard(origin.got.get()) == "ten"
        for _ in range(30):  # 80 hops: past the default max_call_depth (64)
            hop = await guard(conn.service.echo_listener(hop))
        with pytest.raises(aqueduct.RemoteError) as raised:
            await guard(hop.notify("forty"))
        assert raised.value.type_name == "CallLimitExceeded" and "max_call_depth (64)" in raised.value.remote_message
        assert origin.got.empty()


async def test_a_caller_that_gives_up_on_calls_that_call_back_leaves_both_sides_idle(certs: DevCerts) -> None:
    class Stuck(CallsBack):
        async def notify(self, text: str) -> None:
            await self.calc.add(1, 2)  # (the callback's call back: on main this deadlocked past 64 callers)
            await asyncio.Event().wait()

    async with served(certs, Forgetful()) as (_, conn, _server):
        from .test_errors_and_deadlines import sizes
        assert await guard(conn.service.add(0, 0)) == 0
        gc.collect()
        tasks, before = len(asyncio.all_tasks()) + 1, dispatchers()  # (+1: the guard's task polling)
        with pytest.raises(aqueduct.Timeout), aqueduct.call_options(timeout=0.5):
            await asyncio.gather(*(conn.service.subscribe(Stuck(conn.service))
                                   for _ in range(DEFAULT_MAX_CONCURRENT_CALLS)))

        async def idle() -> None:
            last = (-1, -1)
            while (now := (len(asyncio.all_tasks()), dispatchers())) != (tasks, before):
                if now == last:  # (nothing moved since the last look: a collection, not at every look)
                    gc.collect()
                last = now
                await asyncio.sleep(0.05)  # (a poll of a condition)

        try:
            await guard(idle())
        except TimeoutError:
            from aqueduct.services.dispatch import _RUNNING
            live = [(t.get_coro().cr_frame.f_locals.get("impl"), t.get_coro().cr_frame.f_locals.get("rx"))  # type: ignore[union-attr]
                    for t in _RUNNING]
            extra = list(asyncio.all_tasks())
            raise AssertionError(f"{len(extra)} tasks (baseline {tasks}), dispatchers {dispatchers()} / {before}: "
                                 f"{[repr(t.get_coro())[:120] for t in extra][:20]}; dispatchers' (impl, rx): {live}; "
                                 f"state sizes: {[sizes(c) for c in (conn, *_server.connections)]}") from None
        assert await guard(conn.service.add(1, 1)) == 2


async def test_exception_text_is_withheld_by_default_and_logged_with_a_call_id(
        certs: DevCerts, caplog: pytest.LogCaptureFixture) -> None:
    async with served(certs) as (_, conn, _server):
        with caplog.at_level(logging.ERROR, "aqueduct.services"):
            with pytest.raises(aqueduct.RemoteError) as raised:
                await guard(conn.service.fail("/srv/internal/secret-db/users.sqlite"))
        assert raised.value.type_name == "KeyError"
        assert "secret-db" not in str(raised.value)
        call_id = raised.value.remote_message.split("call ")[1].split()[0].strip(":;,.")
        logged = [r for r in caplog.records if call_id in r.getMessage()]
        assert logged and logged[0].exc_info is not None and "secret-db" in str(logged[0].exc_info[1])


async def test_exception_text_is_sent_when_asked_and_cut_to_the_configured_size(certs: DevCerts) -> None:
    class Verbose(Calc):
        async def fail(self, text: str) -> None:
            raise ValueError(text * 17_000_000 if text == "x" else text)  # (over the 16 MiB frame size)

    limits = ServiceLimits(send_error_text=True, max_error_text=1000)
    async with served(certs, Verbose(), server_kw={"service_limits": limits}) as (_, conn, _server):
        with pytest.raises(aqueduct.RemoteError) as raised:
            await guard(conn.service.fail("x"))
        message = raised.value.remote_message
        assert len(message) < 1100 and message.endswith("[cut: 1000 of 17000000 characters]")
        with pytest.raises(aqueduct.RemoteError, match="short"):
            await guard(conn.service.fail("short"))


async def test_a_reply_that_cannot_be_sent_reaches_the_caller_as_a_remote_error(certs: DevCerts) -> None:
    class Huge(Calc):
        async def wait(self, key: str) -> str:
            return "x" * 17_000_000  # (over the 16 MiB frame size)

    async with served(certs, Huge()) as (_, conn, _server):
        with pytest.raises(aqueduct.RemoteError) as raised:
            await guard(conn.service.wait("k"))
        assert raised.value.type_name == "ReplyFailed" and "LimitExceeded" in raised.value.remote_message
        assert await guard(conn.service.add(1, 1)) == 2


async def test_calls_queued_for_a_connection_that_closed_are_never_started(certs: DevCerts) -> None:
    class Counting(Calc):
        added = 0

        async def add(self, a: int, b: int) -> int:
            Counting.added += 1
            return a + b

    impl = Counting()
    async with served(certs, impl, server_kw={"max_concurrent_calls": 1}) as (_, conn, server):
        (server_conn,) = server.connections
        waiting = asyncio.ensure_future(conn.service.wait("k"))
        await guard(impl.started.get())
        queued = [asyncio.ensure_future(raw_call(conn.entrypoint, ADD, None, a=1, b=1)) for _ in range(50)]

        async def arrived() -> None:  # every queued call's reply sender exists on the server
            while link_of(server_conn).engine.state_sizes()["senders"] < 51:
                await asyncio.sleep(0.01)  # (a poll of a condition)

        await guard(arrived())
        await conn.close()
        for task in (waiting, *queued):
            with pytest.raises(aqueduct.AqueductError):
                await guard(task)
        assert await guard(impl.cancelled.get()) == "k"

        async def drained() -> None:  # the server's dispatcher has read the channel to its end
            while server.connections or service_sizes(link_of(server_conn))["calls_running"]:
                await asyncio.sleep(0.01)  # (a poll of a condition)

        await guard(drained())
        assert Counting.added == 0


@contextlib.asynccontextmanager
async def without_collector(certs: DevCerts, impl: Calculator) -> AsyncIterator[tuple[Any, int]]:
    """A client served by `impl` (one call made), the count of dispatchers then, and the cyclic collector off
    while in the block: what is released is released by reference counting alone."""
    async with served(certs, impl) as (_, conn, _server):
        assert await guard(conn.service.add(0, 0)) == 0
        gc.collect()
        before = dispatchers()
        gc.disable()
        try:
            yield conn, before
        finally:
            gc.enable()


async def dispatchers_become(n: int) -> None:
    """Wait (bounded by `guard`) until exactly `n` capability dispatchers run; AssertionError naming the count if
    not. A poll of a condition; no collection runs meanwhile (the tests count with the cyclic collector off)."""

    async def reached() -> None:
        while dispatchers() != n:
            await asyncio.sleep(0.01)

    try:
        await guard(reached())
    except TimeoutError:
        raise AssertionError(f"dispatchers {dispatchers()}, expected {n}") from None


async def test_dropped_capabilities_are_released_without_the_cyclic_collector(certs: DevCerts) -> None:
    """Forwarders (a stub passed on) and origin dispatchers end when the last stub is dropped, by reference
    counting alone: counted with the cyclic collector off. Also when the call that carried the capability was
    abandoned (its caller's deadline passed while the server waited): a cancelled call's traceback used to hold
    its frames, the stub among their variables, in a cycle through the dispatcher's task."""

    class Stuck(Listener):
        async def notify(self, text: str) -> None:
            await asyncio.Event().wait()

    async with without_collector(certs, Forgetful()) as (conn, before):
        for _ in range(200):
            back = await guard(conn.service.echo_listener(Collect()))  # (a forwarder on the server)
            del back
            await guard(conn.service.drop(Collect()))
        with aqueduct.call_options(timeout=0.2):
            gave_up = await guard(asyncio.gather(*(conn.service.subscribe(Stuck()) for _ in range(50)),
                                                 return_exceptions=True))
        assert all(isinstance(e, aqueduct.Timeout) for e in gave_up)

        await dispatchers_become(before)


class Later(Calc):
    async def subscribe(self, listener: Listener) -> None:
        await asyncio.sleep(0)  # (resumed by the loop, not by a packet: its send finds no transmit pending)
        await listener.notify("later")


@contextlib.contextmanager
def scheduled_by(owners: list[Any]) -> Iterator[list[Any]]:
    """The `current_call()` each callback that one of `owners` schedules on the loop (call_soon, call_at) will
    run with, recorded while in the block (the loop's methods wrapped: what it schedules is observed, not
    changed)."""
    loop: Any = asyncio.get_running_loop()
    seen: list[Any] = []
    wrapped = {name: getattr(loop, name) for name in ("call_soon", "call_at")}

    def recording(schedule: Any) -> Any:
        def schedule_and_record(*args: Any, context: Any = None) -> Any:
            callback = args[0] if schedule is wrapped["call_soon"] else args[1]
            if any(getattr(callback, "__self__", None) is owner for owner in owners):
                seen.append(CURRENT.get() if context is None else context.get(CURRENT))
            return schedule(*args, context=context)
        return schedule_and_record

    for name, schedule in wrapped.items():
        setattr(loop, name, recording(schedule))
    try:
        yield seen
    finally:
        for name in wrapped:
            delattr(loop, name)


async def test_a_connections_own_callbacks_never_run_in_a_served_calls_context(certs: DevCerts) -> None:
    """The end-of-turn transmit and the timers a connection schedules are its own: they run in its context, not
    in that of the call whose send scheduled them. They did: a call that sent in a turn with no transmit pending
    (resumed by the loop, or cancelled because its caller gave up) scheduled the transmit in its context; the
    transmit armed the QUIC timer there, that timer re-armed itself there, and a timer cancelled for an earlier
    deadline stays in the loop's heap, its context with it, until its own (the idle timeout): the call's
    `current_call()`, its arguments and so the capabilities it was passed, outlived it for as long as that,
    keeping the capability's dispatcher and its implementation on the caller's side alive (the two tests above
    failed so under load)."""
    async with served(certs, Later()) as (_, conn, server):
        (server_conn,) = server.connections
        with scheduled_by([link_of(server_conn).protocol, link_of(conn).protocol]) as seen:
            await guard(conn.service.subscribe(Collect()))
        assert seen, "no callback of the connections was scheduled: the test saw nothing"
        assert not [info for info in seen if info is not None], seen


async def test_an_abandoned_calls_deadline_does_not_keep_its_arguments_until_it_passes(certs: DevCerts) -> None:
    """A call's deadline (`meta.timeout`) is a loop timer, cancelled when the call ends early; a cancelled timer
    stays in the loop's heap (its context with it) until its time. Armed in the call's context, it kept the
    call's `current_call()`, arguments included, for as long as the caller had allowed: a capability passed to
    an abandoned call with an hour to run was released an hour later."""

    notified = asyncio.Event()

    class Stuck(Listener):
        async def notify(self, text: str) -> None:
            notified.set()
            await asyncio.Event().wait()

    async with without_collector(certs, Forgetful()) as (conn, before):
        with aqueduct.call_options(timeout=3600.0):
            call = asyncio.ensure_future(conn.service.subscribe(Stuck()))
        await guard(notified.wait())  # (the server runs the call, its deadline armed: it called back)
        call.cancel()

        await dispatchers_become(before)


async def test_a_capability_made_in_a_call_does_not_keep_the_calls_arguments(certs: DevCerts) -> None:
    """A capability's dispatcher is a task made where the capability is first sent: for a method's result, in
    the call serving it. It ran in (and its done callback kept) a copy of that call's context, so the call's
    `current_call()`, its arguments with it, lived as long as the capability: the caller's listener passed to
    the call stayed served while the caller held the result."""

    class Fresh(Calc):
        async def echo_listener(self, listener: Listener) -> Listener:
            return Collect()  # (a capability of its own: its dispatcher is made while this call is current)

    async with without_collector(certs, Fresh()) as (conn, before):
        back = await guard(conn.service.echo_listener(Collect()))

        await dispatchers_become(before + 1)  # the argument's dispatcher ended; the result's serves
        await guard(back.notify("still served"))
        del back
        await dispatchers_become(before)


async def test_the_dispatcher_refuses_every_call_whose_numbers_it_cannot_use() -> None:
    """Hypothesis feeds the dispatcher (over a local channel) calls with generated metadata: each is answered,
    either run or refused with a readable InvalidCall naming a limit, and the loop's timers stay finite."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from aqueduct.services.dispatch import serve_calls

    iface = interface_of(Calculator)
    tx, rx = aqueduct.channel(iface.call_type)
    server = asyncio.ensure_future(serve_calls(rx, Calc(), iface))
    limits = ServiceLimits()
    seen: list[tuple[bool, str]] = []
    loop = asyncio.get_running_loop()

    metas = st.builds(
        CallMeta,
        timeout=st.none() | st.floats(allow_nan=True, allow_infinity=True) | st.floats(0, 100),
        metadata=st.dictionaries(st.text(max_size=20), st.text(max_size=5000), max_size=80),
        depth=st.integers(-5, 2**40) | st.integers(0, 3),
    )

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(meta=metas)
    def check(meta: CallMeta) -> None:
        fut = asyncio.run_coroutine_threadsafe(request(tx, lambda r: ADD.call(reply=r, meta=meta, a=1, b=2)), loop)
        reply = fut.result(timeout=20)
        if reply.error is None:
            assert reply.value == 3
            assert meta.timeout is None or (math.isfinite(meta.timeout) and 0 <= meta.timeout)
            assert 0 <= meta.depth <= limits.max_call_depth
            assert len(meta.metadata) <= limits.max_metadata_entries
        else:
            assert reply.error.type in ("InvalidCall", "CallLimitExceeded"), reply.error
            assert "max_" in reply.error.message
        seen.append((reply.error is None, ""))

    await asyncio.to_thread(check)
    assert timers_in_order()
    assert any(ok for ok, _ in seen) and any(not ok for ok, _ in seen)
    await tx.finish()
    await guard(server)


async def test_a_nested_call_over_max_nested_calls_fails_at_once_naming_the_limit(certs: DevCerts) -> None:
    """Nested calls never wait for a slot: one past `max_nested_calls` fails at once with CallLimitExceeded
    (here raised in the server's method, where the callback is made, and reaching the caller by name)."""
    release = asyncio.Event()

    class Held(Listener):
        def __init__(self) -> None:
            self.entered = asyncio.Event()

        async def notify(self, text: str) -> None:
            self.entered.set()
            await release.wait()

    limits = ServiceLimits(max_nested_calls=1)
    async with served(certs, Forgetful(), server_kw={"service_limits": limits}) as (_, conn, _server):
        first = Held()
        holding = asyncio.ensure_future(conn.service.subscribe(first))
        await guard(first.entered.wait())  # (the server's one nested call is in flight)
        with pytest.raises(aqueduct.RemoteError) as raised:
            await guard(conn.service.subscribe(Held()))
        assert raised.value.type_name == "CallLimitExceeded"
        assert "max_nested_calls (1)" in raised.value.remote_message
        release.set()
        await guard(holding)
        assert await guard(conn.service.subscribe(CallsBack(conn.service))) is None  # (the slot came back)


async def test_the_caller_refuses_a_call_nested_deeper_than_max_call_depth() -> None:
    """Over a local channel: a method that calls itself recursively stops at `max_call_depth`: CallLimitExceeded
    is raised where the too-deep call is made, and reaches the outer callers by name."""
    from aqueduct.services.dispatch import serve_calls, spawn
    from aqueduct.services.stub import make_stub

    class Deep(Listener):
        def __init__(self) -> None:
            self.me: Listener | None = None
            self.depth = 0

        async def notify(self, text: str) -> None:
            self.depth = max(self.depth, aqueduct.current_call().depth)
            assert self.me is not None
            await self.me.notify(text)

    iface = interface_of(Listener)
    tx, rx = aqueduct.channel(iface.call_type)
    impl = Deep()
    spawn(serve_calls(rx, impl, iface))
    impl.me = make_stub(iface, tx)
    with pytest.raises(aqueduct.RemoteError) as raised:
        await guard(impl.me.notify("down"))
    assert raised.value.type_name == "CallLimitExceeded" and "max_call_depth (64)" in raised.value.remote_message
    assert impl.depth == ServiceLimits().max_call_depth
    with pytest.raises(aqueduct.CallLimitExceeded, match="max_call_depth") as local:  # (as the deepest saw it)
        token = CURRENT.set(aqueduct.CallInfo("Listener", "notify", {}, {}, "server", depth=64))
        try:
            await impl.me.notify("one more")
        finally:
            CURRENT.reset(token)
    assert local.value.limit == "max_call_depth"
    await tx.finish()


async def test_a_subscription_made_in_a_call_does_not_keep_the_calls_arguments(certs: DevCerts) -> None:
    """A broadcast's subscriber is served by a pump task made where `subscribe()` is called: in a method, in the
    call serving it. Made in that call's context, the pump kept the call's `current_call()`, its arguments with
    it, for as long as the subscription lived: a listener passed to the call stayed served (its dispatcher on the
    caller's side open) while the server kept the subscription."""

    class Subscribes(Calc):
        def __init__(self) -> None:
            super().__init__()
            self.ticks: aqueduct.Broadcast[int] = aqueduct.Broadcast(int)
            self.kept: list[aqueduct.Receiver[int]] = []

        async def subscribe(self, listener: Listener) -> None:
            self.kept.append(self.ticks.subscribe())  # (a subscription that outlives the call)

    impl = Subscribes()
    async with without_collector(certs, impl) as (conn, before):
        await guard(conn.service.subscribe(Collect()))
        assert impl.kept and impl.ticks.subscribers == 1

        await dispatchers_become(before)

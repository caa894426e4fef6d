"""`aqueduct bench --services` measures the service rows beside request and grpcio's unary call in one run
(a tiny run: the figures are not judged here, only that every row was measured with calls)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from aqueduct.bench.report import service_lines
from aqueduct.bench.runner import Results
from aqueduct.quic.certs import make_dev_certs
from benchmarks import services


async def test_the_service_rows_are_measured_beside_request_and_grpc() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        make_dev_certs(tmp)
        rows = await services.measure(Path(tmp), 0.05, 1)
    kinds = ["service call", "aqueduct.request fresh oneshot"] + (["grpcio aio unary"] if services.grpc_available()
                                                                   else [])
    assert set(rows) == {f"{k} ({n} in flight)" for k in kinds for n in services.FLIGHTS}
    for row in rows.values():
        assert row["calls_s"][0] > 0 and 0 < row["p50_us"][0] <= row["p99_us"][0]
        assert row["client_cpu_us"][0] > 0 and row["server_cpu_us"][0] > 0
    printed = "\n".join(service_lines(Results(options={}, services=rows)))
    assert "service call (32 in flight)" in printed and "calls/s" in printed and "CPU us/call" in printed


async def test_each_service_row_is_counted_on_its_server() -> None:
    """What each service row times is what its server answered: a typed service call reaches the service's
    method, a request reaches the typed entrypoint with its own reply oneshot, a grpcio call the unary handler
    (`_drive`'s 50 warm-up calls, then the window's: one per caller at least)."""
    with tempfile.TemporaryDirectory() as tmp:
        make_dev_certs(tmp)
        serving = await services.start(Path(tmp))
        try:
            callers, closers = await services._callers(serving.ports, Path(tmp) / "ca.pem")
            try:
                for kind, call in callers.items():
                    timed = (await services._drive(call, 4, 0.02, lambda: (0.0, 0.0)))[1]
                    tally = serving.tallies[kind]
                    assert tally.calls == 50 + len(timed), kind  # every call timed reached its own server
                    if kind == "aqueduct.request fresh oneshot":
                        assert tally.channels == tally.calls and len(tally.connections) == 1
                assert {k for k, t in serving.tallies.items() if t.calls} == set(callers)
            finally:
                for close in closers:
                    await close()
        finally:
            await serving.stop()


async def test_every_caller_of_a_row_times_a_call_however_late_it_starts() -> None:
    """A row's window can be over before its callers start (the warm-up and the CPU reading with the serving
    process take their time on a loaded machine: a 0.05 s window in the test above was): each caller still
    times one call, so no row is measured with no calls (a p50 of nothing was an IndexError)."""
    made = 0

    async def call() -> None:
        nonlocal made
        made += 1

    rate, latencies, _ = await services._drive(call, 4, 0.0, lambda: (0.0, 0.0))
    assert len(latencies) == 4 and made == 50 + 4
    assert rate > 0

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

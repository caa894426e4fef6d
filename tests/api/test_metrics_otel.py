"""The OpenTelemetry exporter (the `otel` extra) pushes the Prometheus families over real OTLP/HTTP.

A small OTLP receiver (an HTTP server decoding ExportMetricsServiceRequest protobufs, as a collector does)
gets what a live server counted, from the library call and from `aqueduct serve --otlp-endpoint`."""

from __future__ import annotations

import asyncio
import queue
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

import aqueduct
from aqueduct.metrics import FAMILIES, Metrics
from aqueduct.metrics_otel import export_otlp
from aqueduct.quic.certs import DevCerts

from .conftest import GUARD, guard, running

Points = dict[str, list[tuple[dict[str, str], float]]]


class Receiver:
    """An OTLP/HTTP metrics endpoint on loopback; each export lands in `exports` as {name: [(attrs, value)]}."""

    def __init__(self) -> None:
        self.exports: queue.Queue[tuple[Points, dict[str, str]]] = queue.Queue()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                req = ExportMetricsServiceRequest.FromString(body)
                points: Points = {}
                resource: dict[str, str] = {}
                for rm in req.resource_metrics:
                    resource = {a.key: a.value.string_value for a in rm.resource.attributes}
                    for sm in rm.scope_metrics:
                        for m in sm.metrics:
                            data = m.sum.data_points if m.HasField("sum") else m.gauge.data_points
                            points[m.name] = [({a.key: a.value.string_value for a in p.attributes},
                                               p.as_double if p.HasField("as_double") else float(p.as_int))
                                              for p in data]
                outer.exports.put((points, resource))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.http = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1/metrics"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    async def next_export(self) -> tuple[Points, dict[str, str]]:
        return await asyncio.get_running_loop().run_in_executor(None, lambda: self.exports.get(timeout=GUARD))


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.http.shutdown()


def total(points: Points, name: str) -> float:
    return sum(v for _, v in points.get(name, ()))


async def test_every_family_is_exported_with_what_the_server_counted(certs: DevCerts, receiver: Receiver) -> None:
    metrics = Metrics()

    async def echo(conn: aqueduct.Connection) -> None:
        async for msg in conn.entrypoint:
            async with msg["reply"] as reply:
                await reply.send(msg["n"])

    async with running(certs, echo, metrics=metrics) as (url, _server):
        export = export_otlp(metrics, receiver.url, interval=3600, service_name="orders")  # flushed by hand
        async with aqueduct.connect(url, ca=certs.ca) as conn:
            for n in range(5):
                tx, rx = aqueduct.channel()
                await conn.entrypoint.send({"n": n, "reply": tx})
                assert await guard(rx.recv()) == n
            assert await export.flush()
            points, resource = await receiver.next_export()
        await export.close()
    assert resource["service.name"] == "orders"
    names = set(points)
    expected = {f for f in FAMILIES if f != "aqueduct_rtt_seconds"} | {"aqueduct_rtt_seconds_count",
                                                                         "aqueduct_rtt_seconds_sum"}
    assert expected <= names, expected - names
    assert total(points, "aqueduct_connections_accepted") == 1
    assert total(points, "aqueduct_connections_open") == 1
    assert dict((tuple(a.items()), v) for a, v in points["aqueduct_handshakes"])[(("kind", "1rtt"),)] == 1
    assert total(points, "aqueduct_messages_received") == 5  # the five requests on the entrypoint
    assert total(points, "aqueduct_messages_sent") == 5  # the five replies
    by_mode = {a["mode"]: v for a, v in points["aqueduct_messages_received"]}
    assert by_mode["ordered"] == 5 and by_mode["unreliable"] == 0
    assert total(points, "aqueduct_channel_ends") >= 5  # each reply channel finished


async def test_cli_serve_pushes_to_an_otlp_endpoint(certs: DevCerts, receiver: Receiver) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aqueduct", "serve", "--echo", "--port", "0", "--cert", str(certs.cert),
        "--key", str(certs.key), "--otlp-endpoint", receiver.url, "--otlp-interval", "0.2",
        stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        listening = (await guard(proc.stdout.readline())).decode()
        assert listening.startswith("listening on ")
        assert f"pushed over OTLP to {receiver.url}" in (await guard(proc.stdout.readline())).decode()
        url = "aqueduct://" + listening.strip().removeprefix("listening on ")
        async with aqueduct.connect(url, ca=certs.ca, codec=aqueduct.RawCodec()) as conn:
            reply_tx, reply_rx = aqueduct.channel()
            await conn.entrypoint.send(aqueduct.RawMessage(b"ping", [reply_tx]))
            assert (await guard(reply_rx.recv())).data == b"ping"
            while True:  # periodic exports: the first one taken after the echo counts it
                points, _ = await receiver.next_export()
                if total(points, "aqueduct_messages_received") >= 1:
                    break
        assert total(points, "aqueduct_connections_accepted") == 1
    finally:
        proc.terminate()
        await proc.wait()
    assert proc.returncode == 0

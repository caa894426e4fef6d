"""OpenTelemetry export of a server's metrics over OTLP/HTTP (the `otel` extra).

The Prometheus families of `aqueduct.metrics.Metrics` stay the one source
of truth; this bridge reports the same numbers through OpenTelemetry, for
services whose collector speaks OTLP rather than scraping. Each family
becomes one observable instrument of the same name: a counter family an
ObservableCounter (its `_total` samples, labels as attributes), a gauge an
ObservableGauge, and the RTT histogram two counters, `aqueduct_rtt_seconds_count`
and `aqueduct_rtt_seconds_sum`.

Threads: the metrics are written on the event loop, so the bridge reads them
there too. A loop task takes a snapshot of every sample each `interval`
seconds and then hands the export (an HTTP POST, blocking) to a worker
thread; the instruments' callbacks only read that snapshot. The SDK's own
export thread is off (interval infinite), so `flush()` exports at once and
tests need no timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Iterable
from typing import Any

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from .metrics import FAMILIES, Metrics

Sample = tuple[dict[str, str], float]


class OtlpExport:
    """Pushes `metrics` to an OTLP/HTTP endpoint every `interval` seconds (see `export_otlp`)."""

    def __init__(self, metrics: Metrics, exporter: MetricExporter, *, interval: float = 10.0,
                 service_name: str = "aqueduct") -> None:
        self.metrics = metrics
        self.interval = interval
        self.exports = 0
        """Exports completed so far."""
        self._snapshot: dict[str, list[Sample]] = {}
        self._reader = PeriodicExportingMetricReader(exporter, export_interval_millis=math.inf)
        self.provider = MeterProvider(metric_readers=[self._reader],
                                      resource=Resource.create({"service.name": service_name}))
        meter = self.provider.get_meter("aqueduct")
        kinds = _kinds(metrics)
        for family in FAMILIES:
            if kinds.get(family) == "gauge":
                meter.create_observable_gauge(family, callbacks=[self._reads(family)])
            elif kinds.get(family) == "histogram":
                for part in ("count", "sum"):
                    meter.create_observable_counter(f"{family}_{part}", callbacks=[self._reads(f"{family}_{part}")])
            else:
                meter.create_observable_counter(family, callbacks=[self._reads(family)])
        self._task: asyncio.Task[None] | None = None

    def _reads(self, name: str) -> Any:
        def observe(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(value, labels) for labels, value in self._snapshot.get(name, ())]
        return observe

    def take_snapshot(self) -> None:
        """Read every sample now (call on the event loop, where the metrics are written)."""
        snap: dict[str, list[Sample]] = {}
        for family in self.metrics.registry.collect():
            for s in family.samples:
                if family.type == "counter" and s.name == family.name + "_total":
                    snap.setdefault(family.name, []).append((dict(s.labels), s.value))
                elif family.type == "gauge" and s.name == family.name:
                    snap.setdefault(family.name, []).append((dict(s.labels), s.value))
                elif family.type == "histogram" and s.name in (family.name + "_count", family.name + "_sum"):
                    snap.setdefault(s.name, []).append((dict(s.labels), s.value))
        self._snapshot = snap

    async def flush(self) -> bool:
        """Snapshot and export now; True if the exporter accepted the batch."""
        self.take_snapshot()
        ok = await asyncio.get_running_loop().run_in_executor(None, self._reader.force_flush)
        self.exports += 1
        return bool(ok)

    def start(self) -> None:
        """Export every `interval` seconds from now on, until `close`."""
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)  # (a period, not a synchronisation)
            await self.flush()

    async def close(self) -> None:
        """Stop the periodic export, send what was counted last, and shut the exporter down."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(Exception):  # (a collector gone at shutdown: nothing to tell it any more)
            await self.flush()
        await asyncio.get_running_loop().run_in_executor(None, self.provider.shutdown)


def _kinds(metrics: Metrics) -> dict[str, str]:
    return {family.name: family.type for family in metrics.registry.collect()}


def export_otlp(metrics: Metrics, endpoint: str, *, interval: float = 10.0, service_name: str = "aqueduct",
                headers: dict[str, str] | None = None) -> OtlpExport:
    """Start pushing `metrics` to `endpoint` (e.g. "http://127.0.0.1:4318/v1/metrics") every `interval` s.

    Call on the event loop; `await export.close()` at shutdown sends the last counts."""
    export = OtlpExport(metrics, OTLPMetricExporter(endpoint=endpoint, headers=headers), interval=interval,
                        service_name=service_name)
    export.start()
    return export

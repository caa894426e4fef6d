"""Prometheus metrics: `serve(..., metrics=("127.0.0.1", 9464))`, `aqueduct serve --metrics-port P`.

Theory of operation. Counting happens where the numbers already are, and is
read at scrape time. Each `Connection` counts the messages and bytes it
sends and receives per delivery mode (`Stats`); a `Metrics` object tracks
the connections it was given (`track`), folds a connection's final counts
into its totals when the connection ends, and at scrape time reports those
totals plus the live connections' current counts. What nothing counts
otherwise (acknowledged and nacked message runs, channel ends by reason,
handshakes by kind, closes for a limit) it counts itself: the connection
hands it every batch of engine events (one call per batch, none per
message). The smoothed RTT of every live connection is observed into a
histogram once per `sample_seconds`.

Everything runs on the event loop's thread: the HTTP endpoint is served by
asyncio (`start_http`), not by prometheus_client's thread, so a scrape never
reads engine state that the loop is changing. prometheus_client renders
the exposition format. The endpoint is bounded (`HttpLimits`): a request
must arrive whole within `read_timeout` seconds and the answer be taken
within the same time, its request line and headers may not exceed
`max_request_bytes`, and at most `max_connections` are open at once (a new
one beyond that ends the oldest): connections that never finish a request
(a slowloris) cost a fixed amount and cannot lock out a scraper. Every family is named `aqueduct_*`; the ones a
server fills are listed in `FAMILIES`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from .api.auth import is_auth_failure
from .core import app
from .wire.errors import CloseCode

if TYPE_CHECKING:
    from .api.connection import QuicLink

MODES = ("ordered", "unordered", "unreliable")
RTT_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

FAMILIES = (
    "aqueduct_connections_open",
    "aqueduct_connections_accepted",
    "aqueduct_connections_refused",
    "aqueduct_handshakes",
    "aqueduct_channels_open",
    "aqueduct_messages_sent",
    "aqueduct_bytes_sent",
    "aqueduct_messages_received",
    "aqueduct_bytes_received",
    "aqueduct_acked_messages",
    "aqueduct_nacked_messages",
    "aqueduct_channel_ends",
    "aqueduct_rtt_seconds",
    "aqueduct_limit_closes",
    "aqueduct_auth_failures",
    "aqueduct_state_size",
)
"""Every family a server's Metrics exposes (counters without their `_total` suffix)."""


@dataclass(frozen=True)
class HttpLimits:
    """Bounds of the metrics HTTP endpoint (`serve(metrics=(host, port, HttpLimits(...)))`; SECURITY.md)."""

    read_timeout: float = 5.0
    """Seconds a connection has to send its whole request and take the answer; then it is closed."""
    max_request_bytes: int = 16 * 1024
    """Largest request line plus headers; a longer request is closed unanswered."""
    max_connections: int = 32
    """Connections open at once; a new one beyond it ends the oldest (which has had the most time)."""


class Metrics(Collector):
    """The metrics of the connections given to `track` (a server's, or a client's), in their own registry."""

    def __init__(self, *, sample_seconds: float = 1.0, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.sample_seconds = sample_seconds
        self.live: set[QuicLink] = set()
        self.accepted = 0
        self.refused_by: Any = None
        """The server's admission counters (`refused`, `start_timeouts`), when serving."""
        self._ended = [[0, 0, 0, 0] for _ in MODES]  # per mode: messages/bytes sent, messages/bytes received
        reg = self.registry
        self.handshakes = Counter("aqueduct_handshakes", "Completed handshakes by kind", ["kind"], registry=reg)
        self.acked = Counter("aqueduct_acked_messages", "Messages the peer acknowledged", ["reliable"], registry=reg)
        self.nacked = Counter("aqueduct_nacked_messages", "Messages reported lost (nacked)", ["reliable"],
                              registry=reg)
        self.ends = Counter("aqueduct_channel_ends", "Channel halves that ended, by half and reason",
                            ["half", "reason"], registry=reg)
        self.limit_closes = Counter("aqueduct_limit_closes", "Connections closed for exceeding a limit", registry=reg)
        self.auth_failures = Counter("aqueduct_auth_failures", "Peers refused by authentication", registry=reg)
        self.rtt = Histogram("aqueduct_rtt_seconds", "Smoothed RTT of live connections, sampled periodically",
                             buckets=RTT_BUCKETS, registry=reg)
        for kind in ("1rtt", "0rtt"):
            self.handshakes.labels(kind)
        for flag in ("true", "false"):
            self.acked.labels(flag)
            self.nacked.labels(flag)
        reg.register(self)
        ProcessCollector(registry=reg)  # process_resident_memory_bytes and friends (Linux)
        self._sampler: asyncio.TimerHandle | None = None

    # ---- fed by the API ----
    def track(self, conn: QuicLink, *, accepted: bool = False) -> None:
        """Count `conn` from now on (a server calls this for every connection it accepts)."""
        self.live.add(conn)
        if accepted:
            self.accepted += 1
        conn.metrics = self
        conn.protocol.handshake.add_done_callback(self._on_handshake)
        conn.closed.add_done_callback(lambda fut: self._on_closed(conn, fut))
        if self._sampler is None:
            self._sampler = asyncio.get_running_loop().call_later(self.sample_seconds, self._sample)

    def on_events(self, events: Iterable[app.AppEvent]) -> None:
        """A batch of one connection's engine events (called by Connection)."""
        for ev in events:
            if isinstance(ev, app.MessagesAcked):
                self.acked.labels("true" if ev.reliable else "false").inc(ev.stop - ev.first)
            elif isinstance(ev, app.MessagesNacked):
                self.nacked.labels("true" if ev.reliable else "false").inc(ev.stop - ev.first)
            elif isinstance(ev, app.ReceiverEnded):
                self.ends.labels("receiver", ev.reason.value).inc()
            elif isinstance(ev, app.SenderEnded):
                self.ends.labels("sender", ev.reason.value).inc()

    def _on_handshake(self, fut: asyncio.Future[Any]) -> None:
        if not fut.cancelled() and fut.exception() is None:
            self.handshakes.labels("0rtt" if fut.result().early_data_accepted else "1rtt").inc()

    def _on_closed(self, conn: QuicLink, fut: asyncio.Future[app.ConnectionClosed]) -> None:
        self.live.discard(conn)
        for totals, counts in zip(self._ended, conn.stats.by_mode().values(), strict=True):
            for i, n in enumerate(counts):
                totals[i] += n
        if not fut.cancelled():
            code = fut.result().error_code
            if code == CloseCode.LIMIT_EXCEEDED:
                self.limit_closes.inc()
            elif is_auth_failure(code):
                self.auth_failures.inc()

    def _sample(self) -> None:
        for conn in self.live:
            rtt = conn.protocol.rtt_smoothed
            if rtt > 0:
                self.rtt.observe(rtt)
        self._sampler = asyncio.get_running_loop().call_later(self.sample_seconds, self._sample)

    def stop(self) -> None:
        """Stop the RTT sampler."""
        if self._sampler is not None:
            self._sampler.cancel()
            self._sampler = None

    # ---- read at scrape time ----
    def collect(self) -> Iterator[Any]:
        """The families computed from live connections and the folded totals (prometheus_client calls this)."""
        live = list(self.live)
        yield GaugeMetricFamily("aqueduct_connections_open", "Connections open now", value=len(live))
        yield CounterMetricFamily("aqueduct_connections_accepted", "Connections accepted", value=self.accepted)
        refused = self.refused_by.refused if self.refused_by is not None else 0
        yield CounterMetricFamily("aqueduct_connections_refused", "New connections dropped by a limit or a drain",
                                  value=refused)
        open_halves = GaugeMetricFamily("aqueduct_channels_open", "Channel halves open now", labels=["half"])
        senders = receivers = 0
        for conn in live:
            if not conn.is_closed:
                s, r = conn.engine.live_halves()
                senders, receivers = senders + s, receivers + r
        yield self._state_sizes(live)
        open_halves.add_metric(["sender"], senders)
        open_halves.add_metric(["receiver"], receivers)
        yield open_halves
        totals = [list(t) for t in self._ended]
        for conn in live:
            for row, counts in zip(totals, conn.stats.by_mode().values(), strict=True):
                for i, n in enumerate(counts):
                    row[i] += n
        names = [("aqueduct_messages_sent", "Messages sent"), ("aqueduct_bytes_sent", "Payload bytes sent"),
                 ("aqueduct_messages_received", "Messages received"),
                 ("aqueduct_bytes_received", "Payload bytes received")]
        for i, (name, doc) in enumerate(names):
            family = CounterMetricFamily(name, f"{doc}, by delivery mode", labels=["mode"])
            for mode, row in zip(MODES, totals, strict=True):
                family.add_metric([mode], row[i])
            yield family

    @staticmethod
    def _state_sizes(live: list[QuicLink]) -> GaugeMetricFamily:
        """Every table of each connection's `state_sizes()` (the engine's and the services'), summed over live
        connections (what peers make us hold)."""
        family = GaugeMetricFamily("aqueduct_state_size", "State held for peers, summed over live connections "
                                   "(ConnectionLink.state_sizes: the engine's tables and the services' calls)",
                                   labels=["table"])
        totals: dict[str, int] = {}
        for conn in live:
            if conn.protocol.engine is not None and not conn.is_closed:
                for table, n in conn.state_sizes().items():
                    totals[table] = totals.get(table, 0) + n
        for table, n in sorted(totals.items()):
            family.add_metric([table], n)
        return family

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format."""
        return generate_latest(self.registry)

    async def start_http(self, host: str, port: int, limits: HttpLimits | None = None) -> asyncio.Server:
        """Serve `GET /metrics` (any path) on the running loop within `limits`; port 0 picks a free one."""
        limits = limits or HttpLimits()
        open_: dict[asyncio.StreamWriter, None] = {}  # in arrival order: the first is the oldest

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if len(open_) >= limits.max_connections:
                oldest = next(iter(open_))
                del open_[oldest]
                oldest.transport.abort()  # its handler ends: reading or draining fails
            open_[writer] = None
            try:
                async with asyncio.timeout(limits.read_timeout):
                    await reader.readuntil(b"\r\n\r\n")  # request line and headers: every path answers the same
                    body = self.exposition()
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: " + CONTENT_TYPE_LATEST.encode()
                                 + b"\r\nContent-Length: " + str(len(body)).encode()
                                 + b"\r\nConnection: close\r\n\r\n" + body)
                    await writer.drain()
            except (ConnectionError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                writer.transport.abort()  # (a slow or oversized request: nothing to flush)
            finally:
                open_.pop(writer, None)
                writer.close()

        return await asyncio.start_server(handle, host, port, limit=limits.max_request_bytes)


async def scrape_totals(host: str, port: int) -> dict[str, float]:
    """GET a metrics endpoint; family -> the sum of its samples (a histogram: its observation count)."""
    from prometheus_client.parser import text_string_to_metric_families

    reader, writer = await asyncio.open_connection(host, port)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: " + host.encode() + b"\r\n\r\n")
    raw = await reader.read()
    writer.close()
    body = raw.partition(b"\r\n\r\n")[2].decode()
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(body):
        wanted = family.name + {"histogram": "_count", "counter": "_total"}.get(family.type, "")
        totals[family.name] = sum(s.value for s in family.samples if s.name in (wanted, family.name))
    return totals

"""A live `aqueduct serve --echo` process for the hostile-peer suite, watched through its metrics endpoint.

`live_server(certs, limits)` starts the echo service as a subprocess with the
suite's limits (`--limit NAME=VALUE`) and a metrics endpoint, and yields a
`LiveServer`; `live_process(*argv)` does the same for any server command that
prints `listening on` and `metrics on` first (examples/typed_service.py serve).
`Watch` scrapes that endpoint every `SAMPLE` seconds while an attack runs and
keeps the peaks: the process's resident memory (`process_resident_memory_bytes`) and every engine table summed over live
connections (`aqueduct_state_size{table}`, i.e. `Engine.state_sizes()`).
`GoodClient` keeps doing echo round trips on its own connection from
127.0.0.1 while the attacker (hostile.RawPeer, raw aioquic from 127.0.0.2)
works, so "other connections are served meanwhile" is measured, not assumed;
its round trip is an echo unless it is given another (`round_trip=`). With
`typed=True` the server is typed_serve.py (the echo rule behind a typed
entrypoint, so it reads a peer's `schema` header) and the good client speaks it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

import aqueduct
from aqueduct.api.codec import RawCodec, RawMessage
from aqueduct.quic.certs import DevCerts

from .typed_serve import Ping

GUARD = 30.0
SAMPLE = 0.05
MIB = 1024 * 1024


def rss(pid: int) -> int:
    """Resident memory of a process, bytes (/proc: the kernel's figure, no help from the process).

    A process that has exited and been reaped holds none: 0 (the drain test's sampler may read once more
    between the server's exit and the test dropping its pid)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


@dataclass
class Sample:
    """One scrape: resident memory, engine tables, and the server's counters."""

    rss: int
    tables: dict[str, int]
    counters: dict[str, float]


@dataclass
class LiveServer:
    """The process, where it listens, and where its metrics are."""

    proc: asyncio.subprocess.Process
    port: int
    metrics: tuple[str, int]
    url: str = ""
    typed: bool = False
    """Whether it is typed_serve.py (entrypoint Ping, CBOR) rather than `aqueduct serve --echo`."""

    async def scrape(self) -> Sample:
        # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow the cancel Watch uses to stop sampling
        # (when the read completes as the cancel arrives), and Watch's exit then waits forever
        async with asyncio.timeout(GUARD):
            reader, writer = await asyncio.open_connection(*self.metrics)
            writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            raw = await reader.read()
        writer.close()
        body = raw.partition(b"\r\n\r\n")[2].decode()
        rss, tables, counters = 0, {}, {}
        for family in text_string_to_metric_families(body):
            for s in family.samples:
                if s.name == "process_resident_memory_bytes":
                    rss = int(s.value)
                elif s.name == "aqueduct_state_size":
                    tables[s.labels["table"]] = int(s.value)
                elif s.name.endswith("_total"):
                    counters[s.name] = counters.get(s.name, 0.0) + s.value
        return Sample(rss, tables, counters)

    async def counter_reaches(self, name: str, value: float) -> None:
        """Scrape until a counter reaches `value` (the server counts a connection once aioquic ended it)."""
        async with asyncio.timeout(GUARD):
            while (await self.scrape()).counters.get(name, 0.0) < value:
                await asyncio.sleep(SAMPLE)


@contextlib.asynccontextmanager
async def live_server(certs: DevCerts, limits: dict[str, object], *extra: str,
                      typed: bool = False) -> AsyncIterator[LiveServer]:
    args = [f"{k}={v}" for k, v in limits.items()]
    program = ([str(Path(__file__).with_name("typed_serve.py"))] if typed
               else ["-m", "aqueduct", "serve", "--echo", "--port", "0", "--metrics-port", "0"])
    async with live_process(
        sys.executable, *program, "--cert", str(certs.cert), "--key", str(certs.key),
        *[a for arg in args for a in ("--limit", arg)], *extra,
    ) as server:
        server.typed = typed
        yield server


@contextlib.asynccontextmanager
async def live_process(*argv: str) -> AsyncIterator[LiveServer]:
    """Run a server command whose first stdout lines are `listening on HOST:PORT` and `metrics on URL`; what it
    prints afterwards is read and dropped (a full pipe would stop the server)."""
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE)
    drain: asyncio.Task[bytes] | None = None
    try:
        assert proc.stdout is not None
        listening = (await asyncio.wait_for(proc.stdout.readline(), GUARD)).decode()
        metrics = (await asyncio.wait_for(proc.stdout.readline(), GUARD)).decode()
        drain = asyncio.ensure_future(proc.stdout.read())
        port = int(listening.split()[-1].rpartition(":")[2])
        mhost, _, mport = metrics.split()[-1].removeprefix("http://").removesuffix("/metrics").rpartition(":")
        yield LiveServer(proc, port, (mhost, int(mport)), f"aqueduct://127.0.0.1:{port}")
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        if drain is not None:
            drain.cancel()


@dataclass
class Watch:
    """Peaks of a live server's memory and tables while an attack runs (scraped every SAMPLE seconds)."""

    server: LiveServer
    before: Sample | None = None
    peak_rss: int = 0
    peak_tables: dict[str, int] = field(default_factory=dict)
    after: Sample | None = None
    _task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Watch:
        self.before = await self.server.scrape()
        self.peak_rss = self.before.rss
        self._task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        while True:
            await self._one()
            await asyncio.sleep(SAMPLE)  # a sampling period, not a synchronisation

    async def _one(self) -> Sample:
        s = await self.server.scrape()
        self.peak_rss = max(self.peak_rss, s.rss)
        for k, v in s.tables.items():
            self.peak_tables[k] = max(self.peak_tables.get(k, 0), v)
        return s

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self.after = await self._one()

    @property
    def growth_mib(self) -> float:
        """How far resident memory rose above where it was before the attack, at its peak."""
        assert self.before is not None
        return (self.peak_rss - self.before.rss) / MIB


RoundTrip = Callable[[aqueduct.Connection[Any]], Awaitable[None]]


async def echo_round_trip(conn: aqueduct.Connection[Any]) -> None:
    """One echo over a reply channel (the echo service, raw codec)."""
    tx, rx = aqueduct.channel()
    await conn.entrypoint.send(RawMessage(b"ping", [tx]))
    reply = await asyncio.wait_for(rx.recv(), GUARD)
    assert reply.data == b"ping"


async def ping_round_trip(conn: aqueduct.Connection[Any]) -> None:
    """One echo against typed_serve.py: a Ping with a typed reply channel."""
    tx, rx = aqueduct.channel(bytes)
    await conn.entrypoint.send(Ping(b"ping", tx))
    assert await asyncio.wait_for(rx.recv(), GUARD) == b"ping"


class GoodClient:
    """A well-behaved client doing round trips (echo, or `round_trip`) on one connection until stopped; counts
    them. `options` go to `connect` (the echo's default codec is RawCodec). `typed`: against typed_serve.py
    (a Ping with a typed reply channel, the server's schema announced)."""

    def __init__(self, url: str, certs: DevCerts, round_trip: RoundTrip = echo_round_trip, *, typed: bool = False,
                 **options: Any) -> None:
        if typed:
            round_trip = ping_round_trip
            options.setdefault("entrypoint", Ping)
        elif round_trip is echo_round_trip:
            options.setdefault("codec", RawCodec())
        self.url, self.certs, self.options, self.round_trip = url, certs, options, round_trip
        self.round_trips = 0
        self._stop = asyncio.Event()
        self._progress = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> GoodClient:
        conn = await asyncio.wait_for(aqueduct.connect(self.url, ca=self.certs.ca, **self.options), GUARD)
        self._task = asyncio.ensure_future(self._run(conn))
        return self

    async def _run(self, conn: aqueduct.Connection) -> None:
        async with conn:
            while not self._stop.is_set():
                await self.round_trip(conn)
                self.round_trips += 1
                self._progress.set()
                self._progress = asyncio.Event()

    async def served_during(self) -> int:
        """Wait for one more completed round trip (proving the server still serves); the count so far."""
        assert self._task is not None
        progress = asyncio.ensure_future(self._progress.wait())
        done, _ = await asyncio.wait({progress, self._task}, return_when=asyncio.FIRST_COMPLETED)
        progress.cancel()
        if self._task in done:
            self._task.result()  # the good client failed: raise why
        return self.round_trips

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._task is not None
        await asyncio.wait_for(self._task, GUARD)


def figures(name: str, watch: Watch, **extra: object) -> str:
    """One line for the closing note: memory before / peak / after and the tables' peaks."""
    assert watch.before is not None and watch.after is not None
    tables = ", ".join(f"{k}={v}" for k, v in sorted(watch.peak_tables.items()) if v)
    more = "".join(f", {k}={v}" for k, v in extra.items())
    line = (f"FIGURES {name}: rss_before={watch.before.rss / MIB:.1f}MiB peak={watch.peak_rss / MIB:.1f}MiB "
            f"after={watch.after.rss / MIB:.1f}MiB growth={watch.growth_mib:.1f}MiB; peak tables: {tables}{more}")
    print("\n" + line)
    return line

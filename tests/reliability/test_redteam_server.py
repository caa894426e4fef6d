"""Red team against a live `aqueduct serve`: the server-side attacks of issue 26 (items 5, 8, 9, 10).

Each attack runs against a real `aqueduct serve --echo` process while a well-behaved client (live.GoodClient,
127.0.0.1) keeps doing echo round trips; the test asserts the bound the fix sets, and that the good client was
served during the attack. The server's resident memory is read from /proc (its metrics endpoint is itself a
target here, and `--workers` serves no metrics). Scaled to a few seconds each; run with -s for FIGURES lines.

- item 8, metrics slowloris: many TCP connections to the metrics port that never finish their request;
- item 9, mass expiry: hundreds of established clients vanish at once and time out together, while a probe
  keeps opening new connections;
- item 10, drain with vanished peers: SIGTERM with `--grace 1` and hundreds of vanished clients;
- item 5, the workers' inbox: a local attacker of another uid (nobody) against `serve --workers 2`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aqueduct.metrics import scrape_totals
from aqueduct.quic.certs import DevCerts, make_dev_certs

from .hostile import round_trip
from .live import GUARD, MIB, GoodClient, live_server, rss
from .nobody import as_nobody, need_root, nobody_process
from .vanishing import vanished_clients

RSS_BOUND_MIB = 48.0
"""Resident memory one attack may add to the server (the bounds allow far less; slack for the allocator)."""


@pytest.fixture
def certs(tmp_path: Path) -> DevCerts:
    return make_dev_certs(tmp_path)


@dataclass
class Rss:
    """Resident memory of some processes, summed: before, its peak while sampled, and after."""

    pids: list[int]
    before: int = 0
    peak: int = 0
    after: int = 0
    _task: asyncio.Task[None] | None = field(default=None, repr=False)

    def now(self) -> int:
        return sum(rss(p) for p in self.pids)

    async def __aenter__(self) -> Rss:
        self.before = self.peak = self.now()
        self._task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        while True:
            self.peak = max(self.peak, self.now())
            await asyncio.sleep(0.05)  # a sampling period, not a synchronisation

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self.after = self.now()
        self.peak = max(self.peak, self.after)

    @property
    def growth_mib(self) -> float:
        return (self.peak - self.before) / MIB


def figures(name: str, mem: Rss, **extra: object) -> None:
    more = "".join(f", {k}={v}" for k, v in extra.items())
    print(f"\nFIGURES {name}: rss_before={mem.before / MIB:.1f}MiB peak={mem.peak / MIB:.1f}MiB "
          f"after={mem.after / MIB:.1f}MiB growth={mem.growth_mib:.1f}MiB{more}")


# ---- item 8: metrics slowloris ----

SLOW = 300
"""Attacking connections to the metrics endpoint (the issue: 3,000 of 60 KB each)."""


async def _closed_by_server(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(ConnectionError):
        while await reader.read(65536):
            pass


async def test_metrics_slowloris_connections_are_closed_and_memory_bounded(certs: DevCerts) -> None:
    async with asyncio.timeout(6 * GUARD), live_server(certs, {}) as server:
        async with GoodClient(server.url, certs) as good:
            await asyncio.wait_for(good.served_during(), GUARD)
            before = good.round_trips
            async with Rss([server.proc.pid]) as mem:
                attackers = []
                for i in range(SLOW):
                    reader, writer = await asyncio.open_connection(*server.metrics)
                    # two kinds: a request line and 60 KB of headers that never end, or a request line alone
                    pad = b"X-Pad: " + b"a" * 60_000 + b"\r\n" if i % 3 else b""
                    writer.write(b"GET /metrics HTTP/1.1\r\n" + pad)
                    attackers.append((reader, writer))
                await asyncio.wait_for(asyncio.gather(*(_closed_by_server(r) for r, _ in attackers)), GUARD)
                served = await asyncio.wait_for(good.served_during(), GUARD) - before
            sample = await server.scrape()  # the endpoint still answers
            assert sample.rss > 0
            for _, writer in attackers:
                writer.close()
        figures("metrics slowloris", mem, attackers=SLOW, good_round_trips=served)
        assert mem.growth_mib < RSS_BOUND_MIB


async def test_each_metrics_http_limit_applies_as_set() -> None:
    """In process, with HttpLimits set small: an oversized request is closed at once, a silent one after
    read_timeout, and a connection beyond max_connections ends the oldest while a scrape is still answered."""
    from aqueduct.metrics import HttpLimits, Metrics

    metrics = Metrics()
    http = await metrics.start_http("127.0.0.1", 0, HttpLimits(read_timeout=0.5, max_request_bytes=1024,
                                                              max_connections=3))
    host, port = http.sockets[0].getsockname()[:2]
    try:
        async with asyncio.timeout(GUARD):
            big_r, big_w = await asyncio.open_connection(host, port)
            big_w.write(b"GET / HTTP/1.1\r\nX: " + b"a" * 2048)
            await _closed_by_server(big_r)  # over max_request_bytes: closed without waiting for read_timeout
            silent = [await asyncio.open_connection(host, port) for _ in range(3)]
            scrape = await scrape_totals(host, port)  # a fourth: the oldest silent one is ended, this answered
            assert "aqueduct_connections_open" in scrape
            await _closed_by_server(silent[0][0])
            for reader, _ in silent[1:]:
                await _closed_by_server(reader)  # read_timeout
            for _, writer in [*silent, (big_r, big_w)]:
                writer.close()
    finally:
        http.close()
        await http.wait_closed()
        metrics.stop()


# ---- item 9: mass expiry ----

VANISHED = 300
"""Established clients that vanish at once (the issue: 2,500 from 84 addresses)."""
EXPIRY = {"idle_timeout": 3.0, "max_connections_per_address": 1000}


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def test_mass_expiry_of_vanished_clients_keeps_new_connections_served(certs: DevCerts) -> None:
    async with asyncio.timeout(8 * GUARD), live_server(certs, EXPIRY) as server:
        async with GoodClient(server.url, certs) as good:
            await asyncio.wait_for(good.served_during(), GUARD)
            async with vanished_clients(server.port, VANISHED, certs):
                opened = (await scrape_totals(*server.metrics))["aqueduct_connections_open"]
            before, cpu = good.round_trips, cpu_seconds(server.proc.pid)
            probes = failures = 0
            async with Rss([server.proc.pid]) as mem:
                # every vanished connection ends by the idle timeout, all within a moment; probe meanwhile
                while (await scrape_totals(*server.metrics))["aqueduct_connections_open"] > 1:  # (the good one)
                    try:
                        await asyncio.wait_for(round_trip(server.url, certs), GUARD)
                    except Exception:  # (counted: the assertion says how many)
                        failures += 1
                    probes += 1
                served = await asyncio.wait_for(good.served_during(), GUARD) - before
            cpu = cpu_seconds(server.proc.pid) - cpu
        assert opened == VANISHED + 1
        assert failures == 0, f"{failures} of {probes} probe connections failed during the expiry"
        assert probes > 0
        figures("mass expiry", mem, vanished=VANISHED, server_cpu_s=f"{cpu:.2f}", probes=probes,
                probe_failures=failures, good_round_trips=served)
        assert mem.growth_mib < RSS_BOUND_MIB


# ---- item 10: drain with vanished peers ----

GRACE = 1.0
DRAIN_GUARD = GRACE + 10.0
"""A failure guard on the drain (the old drain took ~0.3 s per vanished client: 60 s for 200)."""


async def test_sigterm_drain_with_vanished_clients_ends_within_the_grace(certs: DevCerts) -> None:
    import aqueduct
    from aqueduct.api.codec import RawCodec

    async with asyncio.timeout(8 * GUARD), live_server(certs, EXPIRY | {"idle_timeout": 60.0},
                                                       "--grace", str(GRACE)) as server:
        good = await aqueduct.connect(server.url, ca=certs.ca, codec=RawCodec())
        async with vanished_clients(server.port, 200, certs):
            pass
        async with Rss([server.proc.pid]) as mem:
            start = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(server.proc.wait(), DRAIN_GUARD)
            took = time.monotonic() - start
            mem.pids = []
        closed = await asyncio.wait_for(good.wait_closed(), GUARD)
        figures("drain with vanished peers", mem, vanished=200, exit_s=f"{took:.1f}", exit_code=code,
                good_close_code=closed.error_code)
        assert code == 0
        assert closed.error_code == aqueduct.CloseCode.SHUTTING_DOWN


# ---- item 5: the workers' inbox, attacked by another local user ----

SQUAT = """
port = int(sys.argv[1])
held = []
for i in range(2):  # the names the workers' inbox used to have: an abstract socket anyone could bind first
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(f"\\0aqueduct-worker-{port}-{i}")
    held.append(s)
print("ready", flush=True)
time.sleep(3600)
"""

FORGE = """
port, initial, other = int(sys.argv[1]), bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])
trap = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # where the forged frames ask the server to answer
trap.bind(("127.0.0.3", 0))
tport = trap.getsockname()[1]
host = b"127.0.0.3"
frames = {  # the old frame format (text host), the old one with a NUL in the host, the new binary one
    "text": struct.pack("!B", len(host)) + host + struct.pack("!H", tport) + initial,
    "nul": struct.pack("!B", 10) + b"127.0.0.3\\0" + struct.pack("!H", tport) + other,
    "binary": b"\\x04" + socket.inet_aton("127.0.0.3") + struct.pack("!H", tport) + initial,
}
targets = [f"\\0aqueduct-worker-{port}-{i}" for i in range(2)]
with open("/proc/net/unix") as f:  # every socket of the system is listed here, with its path
    for line in f.read().splitlines()[1:]:
        parts = line.split()
        if len(parts) > 7 and "aqueduct-worker" in parts[7]:
            path = parts[7]
            targets.append("\\0" + path[1:] if path.startswith("@") else path)
targets = sorted(set(targets))
outcome = {}
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
for target in targets:
    for name, frame in frames.items():
        try:
            s.sendto(frame, target)
            outcome[f"{target!r} {name}"] = "delivered"
        except OSError as exc:
            outcome[f"{target!r} {name}"] = errno.errorcode.get(exc.errno, str(exc.errno))
    directory = os.path.dirname(target) if not target.startswith("\\0") else ""
    if directory:
        try:
            os.listdir(directory)
            outcome[f"list {directory}"] = "listed"
        except OSError as exc:
            outcome[f"list {directory}"] = errno.errorcode.get(exc.errno, str(exc.errno))
trap.settimeout(1.0)  # (a figure only: the assertion is that nothing was delivered)
answers = 0
try:
    while True:
        trap.recvfrom(65536)
        answers += 1
except socket.timeout:
    pass
print(json.dumps({"targets": targets, "outcome": outcome, "answers": answers}))
"""


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def client_initial(certs: DevCerts, port: int) -> bytes:
    """A real client's first datagram (an Initial packet) to the server on `port`."""
    from aioquic.quic.connection import QuicConnection

    from .hostile import client_config

    quic = QuicConnection(configuration=client_config(certs))
    quic.connect(("127.0.0.1", port), now=time.monotonic())
    return quic.datagrams_to_send(now=time.monotonic())[0][0]


@contextlib.asynccontextmanager
async def workers_server(certs: DevCerts, port: int) -> AsyncIterator[tuple[str, list[int]]]:
    """`aqueduct serve --echo --workers 2` on `port`; yields (url, pids). Fails saying why it did not start."""
    import sys

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aqueduct", "serve", "--echo", "--port", str(port), "--cert", str(certs.cert),
        "--key", str(certs.key), "--workers", "2", "--grace", "1", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        listening = (await asyncio.wait_for(proc.stdout.readline(), GUARD)).decode()
        if not listening.startswith("listening on"):
            raise AssertionError(f"serve --workers 2 did not start: {(await proc.stderr.read()).decode()!r}")
        workers = (await asyncio.wait_for(proc.stdout.readline(), GUARD)).decode()
        pids = [int(p) for p in workers.rsplit("pids ", 1)[1].split(", ")]
        yield f"aqueduct://127.0.0.1:{port}", pids
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), GUARD)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def test_another_user_can_neither_squat_nor_reach_the_workers_inbox(certs: DevCerts) -> None:
    need_root()
    port = free_udp_port()
    async with asyncio.timeout(6 * GUARD), nobody_process(SQUAT, str(port)) as squatter:
        async with workers_server(certs, port) as (url, pids):  # (c) it starts though the old names are taken
            squatter.kill()  # (the attacker's own sockets are not what it attacks next)
            await squatter.wait()
            async with GoodClient(url, certs) as good:
                await asyncio.wait_for(good.served_during(), GUARD)
                before = good.round_trips
                async with Rss(pids) as mem:
                    found = await as_nobody(FORGE, str(port), *(client_initial(certs, port).hex() for _ in range(2)))
                    # (b) every new client is still served (a NUL in a forwarded host used to close the UDP sockets)
                    replies = [await asyncio.wait_for(round_trip(url, certs), GUARD) for _ in range(3)]
                    served = await asyncio.wait_for(good.served_during(), GUARD) - before
    delivered = [k for k, v in found["outcome"].items() if v == "delivered" or v == "listed"]
    figures("workers inbox", mem, targets=len(found["targets"]), delivered=len(delivered),
            outcomes="/".join(sorted(set(found["outcome"].values()))),
            answers_to_attacker=found["answers"], new_clients_served=len(replies), good_round_trips=served)
    assert any("aqueduct-workers-" in t for t in found["targets"]), found  # the attacker did find the inbox
    assert not delivered, f"another user reached the inbox: {delivered}"  # (a)
    assert found["answers"] == 0
    assert mem.growth_mib < RSS_BOUND_MIB

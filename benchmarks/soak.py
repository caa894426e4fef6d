"""Soak: random channel trees over real QUIC through a lossy proxy, for a given time, checking every invariant.

One process runs a server, the impairment proxy (seeded loss, bursts,
duplication, reordering, jitter) and clients. Each client connection keeps
`--trees` channel trees in flight (all delivery modes, attachments both
ways, finish, cancel, early receiver close, channels lost with their
creating message) for `--conn-life` seconds, then ends either gracefully or
by a blackout longer than the idle timeout (every open handle must then end
with ConnectionLost, none may hang). Every finished channel is checked by
the ledger (tests/harness/traffic.py, aqueduct/testing/ledger.py). Samples of RSS, live Python
allocations (`py_blocks`, after a collection: RSS keeps the allocator's
high-water mark, blocks show what is still alive), open handles and engine
table sizes are printed; a summary at the end (`--tracemalloc` adds the
biggest allocation growth per sample). Exit code 1 on any violation.

    .venv/bin/python benchmarks/soak.py --duration 1800 --loss 0.05
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.quic.certs import make_dev_certs
from aqueduct.quic.settings import TransportSettings
from aqueduct.testing.impair import Impairment, ImpairProxy

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the traffic harness

from harness.traffic import TrafficLog, TrafficShape, TreeTraffic


def rss_kib() -> int:
    """Resident set size of this process in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def engine_totals(conns: list[aqueduct.Connection]) -> dict[str, int]:
    """Sum of state_sizes over live connections."""
    total: dict[str, int] = {}
    for c in conns:
        if c.is_closed:
            continue
        for k, v in link_of(c).engine.state_sizes().items():
            total[k] = total.get(k, 0) + v
    return total


def transport_state(conn: aqueduct.Connection) -> dict[str, Any]:
    """Engine and QUIC stream state of a connection, printed when something hangs."""
    q: Any = link_of(conn).protocol.quic
    return {"side": link_of(conn).protocol.side.name, "closed": conn.is_closed,
            "engine": None if conn.is_closed else link_of(conn).engine.state_sizes(),
            "quic_streams": len(q._streams), "blocked_bidi": len(q._streams_blocked_bidi),
            "blocked_uni": len(q._streams_blocked_uni), "remote_max_bidi": q._remote_max_streams_bidi,
            "remote_max_uni": q._remote_max_streams_uni, "unacked": link_of(conn).protocol.unacked_total(),
            "datagrams_pending": len(q._datagrams_pending)}


async def soak(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    log = TrafficLog()
    traffic = TreeTraffic(log, args.seed, TrafficShape(guard=args.guard))
    settings = TransportSettings(idle_timeout=args.idle_timeout, keepalive=args.idle_timeout / 4,
                                 handshake_timeout=10.0)
    imp = Impairment(loss=args.loss, burst_enter=args.loss / 10, duplicate=0.01, reorder=0.02,
                     reorder_delay=0.005, delay=0.001, jitter=0.002)
    certs = make_dev_certs(Path(tempfile.mkdtemp(prefix="soak-certs-")))
    server_conns: list[aqueduct.Connection] = []
    entry_tasks: set[asyncio.Task[None]] = set()
    samples: list[dict[str, Any]] = []
    baseline: list[tracemalloc.Snapshot] = []
    if args.tracemalloc:
        tracemalloc.start(4)
    counters = {"connections": 0, "blackouts": 0, "graceful_closes": 0, "connect_failures": 0,
                "hangs": 0, "orphans": 0}
    start = time.monotonic()
    deadline = start + args.duration

    def sample(conn: aqueduct.Connection | None) -> None:
        live = [c for c in [*server_conns, *([conn] if conn else [])] if not c.is_closed]
        sizes = engine_totals(live)
        gc.collect()
        s = {"t": round(time.monotonic() - start, 1), "rss_kib": rss_kib(), "py_blocks": sys.getallocatedblocks(),
             "open_handles": sizes.get("senders", 0) + sizes.get("receivers", 0),
             "open_channels": traffic.open_channels, "tasks": len(traffic.tasks),
             "sent": log.messages_sent, "received": log.messages_received, "checked": log.checked,
             "violations": len(log.violations), "engine": sizes}
        samples.append(s)
        print(json.dumps(s), flush=True)
        if args.tracemalloc:
            snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
            if baseline:
                for stat in snap.compare_to(baseline[0], "lineno")[:8]:
                    print("  TRACEMALLOC", stat, flush=True)
            else:
                baseline.append(snap)

    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, settings=settings) as server:
        async def accept() -> None:
            async for sconn in server:
                log.tap(sconn)
                server_conns.append(sconn)
                entry_task = asyncio.ensure_future(traffic.serve_entry(sconn.entrypoint))  # not a channel end
                entry_tasks.add(entry_task)
                entry_task.add_done_callback(entry_tasks.discard)

        acceptor = asyncio.ensure_future(accept())
        proxy = await ImpairProxy.start(server.address, up=imp, down=imp, seed=args.seed)
        url = f"aqueduct://{proxy.address[0]}:{proxy.address[1]}"
        next_sample = 0.0
        while time.monotonic() < deadline:
            try:
                conn = await aqueduct.connect(url, ca=certs.ca, settings=settings)
            except (aqueduct.ConnectError, aqueduct.ConnectionLost):
                counters["connect_failures"] += 1
                continue
            counters["connections"] += 1
            log.phase = f"connection {counters['connections']} running"
            log.tap(conn)
            life_end = min(deadline, time.monotonic() + args.conn_life)
            try:
                while time.monotonic() < life_end and not conn.is_closed:
                    while len(traffic.tasks) < 2 * args.trees:
                        await traffic.root(conn.entrypoint)
                    if time.monotonic() >= next_sample:
                        sample(conn)
                        next_sample = time.monotonic() + args.sample_every
                    await asyncio.sleep(0.05)  # a pacing loop of a benchmark, not a synchronisation
            except aqueduct.ConnectionLost:
                pass
            if rng.random() < args.blackout_share:
                log.phase = f"connection {counters['connections']} ending by blackout"
                counters["blackouts"] += 1
                proxy.blackout(args.idle_timeout * 1.5)
                limit = time.monotonic() + args.idle_timeout * 1.5 + args.guard
            else:
                log.phase = f"connection {counters['connections']} ending gracefully"
                counters["graceful_closes"] += 1
                limit = time.monotonic() + args.guard
            # every channel end must come to an end: by finishing, or with ConnectionLost after the blackout
            while traffic.tasks and time.monotonic() < limit:
                await asyncio.sleep(0.1)
            if traffic.tasks:
                counters["hangs"] += len(traffic.tasks)
                for c in [conn, *server_conns]:
                    print("HANG-DIAG", transport_state(c), flush=True)
                names = sorted(t.get_name() for t in traffic.tasks)
                log.violations.append(f"channel ends still running {args.guard} s after the end: {names}")
                for task in list(traffic.tasks):
                    task.cancel()
            counters["orphans"] += traffic.finalize_orphans()
            await conn.close(timeout=2.0)
            while proxy.blacked_out:
                await asyncio.sleep(0.1)
            log.forget_connection(conn)
            proxy.drop_clients()
            for sconn in [c for c in server_conns if c.is_closed]:
                server_conns.remove(sconn)
                log.forget_connection(sconn)
            del conn
            gc.collect()
        sample(None)
        acceptor.cancel()
        proxy.close()

    first, last = samples[0], samples[-1]
    mid = samples[len(samples) // 2]
    summary = {
        "duration_s": round(time.monotonic() - start, 1), "seed": args.seed, "loss": args.loss,
        "messages_sent": log.messages_sent, "messages_received": log.messages_received,
        "channels_checked": log.checked, "violations": len(log.violations), **counters,
        "channel_ends(sender/receiver)": log.ends,
        "rss_kib_start": first["rss_kib"], "rss_kib_mid": mid["rss_kib"], "rss_kib_end": last["rss_kib"],
        "py_blocks_start": first["py_blocks"], "py_blocks_mid": mid["py_blocks"], "py_blocks_end": last["py_blocks"],
        "max_open_handles": max(s["open_handles"] for s in samples),
        "proxy_up": vars(proxy.stats.up), "proxy_down": vars(proxy.stats.down),
    }
    print("SUMMARY " + json.dumps(summary, indent=1))
    for v in log.violations[:50]:
        print("VIOLATION", v)
    return 1 if log.violations else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=60.0, help="seconds to run")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--loss", type=float, default=0.05, help="independent loss per datagram, each direction")
    p.add_argument("--trees", type=int, default=12, help="channels kept in flight per connection")
    p.add_argument("--conn-life", type=float, default=60.0, help="seconds per client connection")
    p.add_argument("--blackout-share", type=float, default=0.3, help="share of connections ended by a blackout")
    p.add_argument("--idle-timeout", type=float, default=4.0)
    p.add_argument("--guard", type=float, default=60.0, help="seconds before an unfinished end counts as a hang")
    p.add_argument("--sample-every", type=float, default=30.0)
    p.add_argument("--tracemalloc", action="store_true", help="print the biggest allocation growth at each sample")
    args = p.parse_args(argv)
    return asyncio.run(soak(args))


if __name__ == "__main__":
    sys.exit(main())

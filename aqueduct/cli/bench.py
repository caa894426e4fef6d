"""`aqueduct bench`: the side-by-side benchmark (Aqueduct, raw aioquic, asyncio TCP) in one bounded run.

Defaults take about 1.5 minutes on a 2-core machine: 5 alternating rounds
of 0.3 s measurements per cell, the API memory figure at 10,000 channels,
and the engine-only costs at 100,000 channels. Prints a table; `--json`
writes every sample and figure, `--plot` a PNG, `--save` keeps the run
(with machine facts) under benchmarks/results/; `--compare A B` runs nothing
and prints the ratio table between two saved runs. `--peers` adds what a service
author picks instead (grpcio over h2c and TLS, ZeroMQ, NATS through a local
nats-server; the `bench` extra) beside Aqueduct's request/reply, streaming and
connect rows, each server in its own process, and the service rows; it ends with the
targets block of issue 34, each target met or NOT met with its spread over rounds.
The peer and service rows are the repository's bench lab (benchmarks/), not part of
the installed package: run `aqueduct bench --peers` from a checkout (its root or a
folder below); the aqueduct measured is the installed one. See aqueduct/bench/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any


def register(sub: Any) -> None:
    """Add the `bench` subcommand."""
    p = sub.add_parser("bench", help="benchmark Aqueduct against raw aioquic and TCP on loopback",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    arg = p.add_argument
    arg("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    arg("--window", type=float, default=0.3, help="seconds per throughput/round-trip measurement (default 0.3)")
    arg("--setups", type=int, default=3,
        help="connections per set-up measurement; the round takes their median (default 3)")
    arg("--api-channels", type=int, default=10_000, help="idle channels for API memory (default 10000; 0: skip)")
    arg("--engine-channels", type=int, default=100_000,
        help="idle channels for engine memory and the throughput curve (default 100000; 0: skip engine costs)")
    arg("--cascade", type=int, default=10_000, help="channels in the cascading-loss tree (default 10000)")
    arg("--engine-messages", type=int, default=20_000,
        help="messages per point of the engine curve (default 20000)")
    arg("--only", action="append", default=[],
        help="run transports whose name contains this (repeat; default: all)")
    arg("--uvloop", action="store_true", help="run both processes on uvloop (extra 'fast'; default: asyncio)")
    arg("--loss-curves", action="store_true",
        help="also measure Marlin Stream and Aqueduct bulk at 0/1/5%% loss through the impairment proxy "
             "(default: off)")
    arg("--services", action="store_true",
        help="also measure service calls/s and p50/p99 (1 and 32 in flight) beside aqueduct.request with a fresh "
             "oneshot and grpcio's aio unary call (if installed: the bench extra); run from a checkout: the "
             "bench lab, benchmarks/ (default: off)")
    arg("--connections", action="store_true",
        help="also measure handshakes/s, memory per idle connection and echo with --idle connections held "
             "(default: off)")
    arg("--idle", type=int, default=10_000, help="idle connections held by --connections (default 10000)")
    arg("--idle-budget", type=float, default=180.0,
        help="seconds each kind may spend opening the --idle connections (default 180)")
    arg("--connection-window", type=float, default=1.0,
        help="seconds per handshake-rate and echo measurement of --connections, and per service-row "
             "measurement (default 1.0)")
    arg("--peers", action="store_true",
        help="also measure grpcio (h2c, TLS), ZeroMQ and NATS beside Aqueduct's request, pair, streaming and "
             "connect rows, and the service rows (--services); run from a checkout: the peers are the bench "
             "lab, benchmarks/peers/ (extra 'bench'; a missing peer is reported; default: off)")
    arg("--peer-idle", type=int, default=200,
        help="idle connections per peer row for its server memory per connection (default 200; 0: skip)")
    arg("--json", metavar="PATH", help="write all samples and figures as JSON ('-' for stdout; default: none)")
    arg("--plot", metavar="PNG", help="write a chart (matplotlib; default: none)")
    arg("--save", action="store_true",
        help="also write the run as JSON with machine facts under benchmarks/results/ (prints the path; "
             "default: off)")
    arg("--compare", nargs=2, metavar=("A", "B"),
        help="run nothing: print the ratio table between two saved runs (B / A per cell)")
    arg("--quiet", action="store_true", help="no progress lines on stderr (default: progress shown)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the suite and report."""
    from ..bench import lab, record, report
    from ..bench.runner import TRANSPORTS, Options, peer_rows
    from ..bench.runner import run as run_suite

    if args.compare:
        try:
            a, b = (record.load(path) for path in args.compare)
        except record.CompareError as e:
            print(f"aqueduct bench: {e}", file=sys.stderr)
            return 2
        print(record.compare_table(a, b, *args.compare))
        return 0

    try:
        lab_rows = peer_rows() if args.peers else []
        if args.services:
            lab.load("services")
    except (lab.LabNotFound, ImportError) as e:
        print(f"aqueduct bench: {e}", file=sys.stderr)
        return 2
    names = [t.name for t in TRANSPORTS] + [r.name for r in lab_rows]
    unknown = [o for o in args.only if not any(o in n for n in names)]
    bad = args.rounds < 1 or args.window <= 0 or args.connection_window <= 0 or min(args.idle, args.peer_idle) < 0
    if unknown or bad:
        why = (f"no transport name contains {unknown[0]!r} (transports: {', '.join(names)})" if unknown
               else "--rounds must be at least 1, --window and --connection-window positive, --idle and --peer-idle "
                  "not negative")
        print(f"aqueduct bench: {why}", file=sys.stderr)
        return 2

    opts = Options(rounds=args.rounds, window=args.window, setups=args.setups, api_channels=args.api_channels,
                   engine_channels=args.engine_channels, cascade=args.cascade, engine_messages=args.engine_messages,
                   only=tuple(args.only), uvloop=args.uvloop, loss_curves=args.loss_curves,
                   connections=args.connections, services=args.services or args.peers, idle=args.idle,
                   connection_window=args.connection_window, idle_budget=args.idle_budget, peers=args.peers,
                   peer_idle=args.peer_idle)

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    if args.uvloop:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    results = asyncio.run(run_suite(opts, progress))
    text = report.table(results)
    if args.json == "-":
        print(json.dumps(report.as_json(results), indent=1))
    else:
        print(text)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report.as_json(results), f, indent=1)
    if args.plot:
        report.plot(results, args.plot)
    if args.save:
        path = record.save(report.as_json(results))
        print(f"saved {path}", file=sys.stderr if args.json == "-" else sys.stdout)
    return 0

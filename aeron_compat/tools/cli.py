# The `aeron_compat` command.  `stat` is AeronStat: it reads the counters snapshots that drivers
# write into their directories (all live drivers under the base directory, or one directory) and
# prints system counters and per-stream positions, once or every N seconds.  `driver` runs the
# standalone media driver (driver/standalone.py) in the foreground until SIGINT/SIGTERM.
"""Command line: `aeron_compat stat [--dir D] [--watch SECONDS] [--json]`, `aeron_compat driver [--dir D]`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..client.codes import DEFAULT_TERM_LENGTH
from ..client.context import Context
from ..client.counters import base_dir, read_snapshots


def format_snapshot(snap: dict[str, Any]) -> str:
    """One driver's counters as AeronStat-like text."""
    up = snap.get("time", 0) - snap.get("started", 0)
    lines = [f"driver {snap['pid']}-{snap['driver_id']}  dir {snap['directory']}  up {up:.1f}s"]
    for i, (name, value) in enumerate(snap["counters"].items()):
        lines.append(f"{i:3d}: {value:>20,d} - {name}")
    for j, s in enumerate(snap["streams"], start=len(snap["counters"])):
        lines.append(f"{j:3d}: {s['value']:>20,d} - {s['name']}: {s['session_id']} {s['stream_id']} {s['channel']}")
    lines += [f"     {link}" for link in snap.get("links", [])]
    return "\n".join(lines)


def _stat(args: argparse.Namespace) -> int:
    root = Path(args.dir) if args.dir else base_dir()
    rounds = 0
    while True:
        snaps = read_snapshots(root)
        if args.json:
            print(json.dumps(snaps))
        elif not snaps:
            print(f"no live aeron_compat driver under {root}")
        else:
            print("\n\n".join(format_snapshot(s) for s in snaps))
        rounds += 1
        if not args.watch or (args.count and rounds >= args.count):
            return 0 if snaps else 1
        time.sleep(args.watch)
        print("-" * 72)


def _driver(args: argparse.Namespace) -> int:
    from ..driver.standalone import serve_forever

    return serve_forever(Context(aeron_dir=args.dir, term_length=args.term_length,
                                 counters_interval=args.counters_interval, udp_media=args.udp_media).conclude())


def build_parser() -> argparse.ArgumentParser:
    """The argument parser."""
    from aqueduct import __version__

    parser = argparse.ArgumentParser(prog="aeron_compat", description="Aeron programming model on Aqueduct")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    stat = sub.add_parser("stat", help="print driver counters, like AeronStat")
    stat.add_argument("--dir", help="one driver directory, or a base directory "
                                       "(default: $AERON_COMPAT_DIR, else /tmp/aeron_compat-$USER)")
    stat.add_argument("--watch", type=float, default=0.0, help="repeat every WATCH seconds")
    stat.add_argument("--count", type=int, default=0, help="with --watch: stop after COUNT rounds")
    stat.add_argument("--json", action="store_true", help="print the raw snapshots as JSON")
    stat.set_defaults(func=_stat)
    drv = sub.add_parser("driver", help="run the standalone media driver (clients: Context(driver_mode='standalone'))")
    drv.add_argument("--dir", help="driver directory (default: $AERON_COMPAT_DIR/standalone, else "
                                    "/tmp/aeron_compat-$USER/standalone)")
    drv.add_argument("--term-length", type=int, default=DEFAULT_TERM_LENGTH,
                     help="default term length in bytes (default: %(default)s)")
    drv.add_argument("--counters-interval", type=float, default=0.25,
                     help="seconds between counters snapshots (default: %(default)s)")
    drv.add_argument("--udp-media", choices=("aqueduct", "loopback"), default="aqueduct",
                     help="aeron:udp transport (default: aqueduct)")
    drv.set_defaults(func=_driver)
    from ..marlin.cli import add_parser as add_stream_parser

    add_stream_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

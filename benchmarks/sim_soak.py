"""Soak the engine in the simulator: run many random seeds, print violations with their replay command.

    .venv/bin/python benchmarks/sim_soak.py --seeds 10000 --start 0 \
        [--loss 0.3] [--flow-control on] [--ghosts] [--lenient] [--actions 40] [-v]

Exit code 1 if any seed violated an invariant. With -v, each failing seed's
script is shrunk and printed.
"""

from __future__ import annotations

import argparse
import sys
import time

from aqueduct.testing.driver import run_seed, shrink


def main(argv: list[str] | None = None) -> int:
    """Run the seeds; return 1 on any violation."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=1000, help="how many seeds")
    p.add_argument("--start", type=int, default=0, help="first seed")
    p.add_argument("--loss", type=float, default=None, help="fixed datagram loss (default: random per seed)")
    p.add_argument("--flow-control", choices=("on", "off"), default=None, help="force stream windows (default: random)")
    p.add_argument("--ghosts", action="store_true", help="often no discarded filter: late messages make ghosts")
    p.add_argument("--lenient", action="store_true", help="skip late calls on ended handles and credit overruns")
    p.add_argument("--actions", type=int, default=40, help="max app actions per script")
    p.add_argument("-v", "--verbose", action="store_true", help="shrink and print each failing script")
    p.add_argument("--max-failures", type=int, default=20, help="stop after this many failing seeds")
    args = p.parse_args(argv)
    t0 = time.monotonic()
    failed = 0
    totals: dict[str, int] = {}
    deepest = 0
    slowest: dict[str, tuple[int, int]] = {}
    for i, seed in enumerate(range(args.start, args.start + args.seeds)):
        fc = None if args.flow_control is None else args.flow_control == "on"
        r = run_seed(
            seed, actions=args.actions, loss=args.loss, flow_control=fc, ghosts=args.ghosts, strict=not args.lenient
        )
        for k, v in r.stats.items():
            totals[k] = totals.get(k, 0) + v
        deepest = max(deepest, r.stats.get("max_depth", 0))
        for key in ("max_resolve_ms", "max_unreliable_resolve_ms"):
            if r.stats.get(key, 0) > slowest.get(key, (0, 0))[0]:
                slowest[key] = (r.stats[key], seed)
        if not r.ok:
            failed += 1
            loss = f" --loss {args.loss}" if args.loss is not None else ""
            loss += f" --flow-control {args.flow_control}" if args.flow_control else ""
            loss += f" --actions {args.actions}" if args.actions != 40 else ""
            loss += " --ghosts" if args.ghosts else ""
            loss += " --lenient" if args.lenient else ""
            print(f"FAIL seed {seed}: {r.violations[0]}  ({len(r.violations)} violations)")
            print(f"  replay: .venv/bin/python benchmarks/sim_soak.py --start {seed} --seeds 1{loss} -v")
            if args.verbose:
                for v in r.violations[:10]:
                    print(f"    {v}")
                small = shrink(r)
                print(f"  network: {r.net}")
                print(f"  shrunk to {len(small.script)} actions: {small.violations[:2]}")
                for a in small.script:
                    print(f"    {a}")
            if failed >= args.max_failures:
                print("too many failures, stopping")
                break
        if (i + 1) % 500 == 0:
            print(f"{i + 1} seeds, {failed} failed, {time.monotonic() - t0:.1f} s", flush=True)
    n = i + 1
    print(
        f"done: {n} seeds from {args.start}, {failed} failed, {time.monotonic() - t0:.1f} s; "
        f"messages sent {totals.get('sent', 0)}, delivered {totals.get('delivered', 0)}, "
        f"acked {totals.get('acked', 0)}, nacked {totals.get('nacked', 0)}; deepest attachment chain {deepest}"
    )
    for key, (ms, seed) in slowest.items():
        print(f"{key}: {ms} ms of virtual time (seed {seed})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

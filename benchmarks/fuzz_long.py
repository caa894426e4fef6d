"""Long fuzz runs: atheris (coverage-guided) on both targets if it is installed, else a seeded random-program loop.

    .venv/bin/python benchmarks/fuzz_long.py --seconds 600            # per target
    .venv/bin/python benchmarks/fuzz_long.py --seconds 60 --no-atheris

Corpora persist in tests/fuzz/corpus/<target> (git-ignored by default: pass --corpus);
crashing inputs land in tests/fuzz/crashes/. Prints executions and findings per target;
exit code 1 if anything was found.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "tests" / "fuzz"
TARGETS = {"decoder": FUZZ / "atheris_decoder.py", "engine": FUZZ / "atheris_engine.py"}
sys.path.insert(0, str(ROOT / "tests"))  # the fuzz programs: tests/harness/fuzzing.py


def run_atheris(name: str, seconds: int, corpus: Path, jobs: int) -> tuple[int, list[str]]:
    """One atheris run; (executions, crash files)."""
    corpus.mkdir(parents=True, exist_ok=True)
    crashes = FUZZ / "crashes"
    crashes.mkdir(parents=True, exist_ok=True)
    before = set(crashes.iterdir())
    cmd = [sys.executable, str(TARGETS[name]), f"-max_total_time={seconds}", f"-artifact_prefix={crashes}/{name}-",
           "-print_final_stats=1", str(corpus)]
    if jobs > 1:
        cmd[3:3] = [f"-jobs={jobs}", f"-workers={jobs}"]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    log = out.stdout + out.stderr
    runs = [int(m) for m in re.findall(r"stat::number_of_executed_units:\s*(\d+)", log)]
    if not runs:
        runs = [int(m) for m in re.findall(r"Done (\d+) runs", log)]
    found = [str(p) for p in set(crashes.iterdir()) - before]
    if out.returncode != 0 and not found:
        found.append(f"atheris exited {out.returncode}: {log[-2000:]}")
    return sum(runs), found


def run_random(name: str, seconds: float, seed: int) -> tuple[int, list[str]]:
    """The fallback: seeded random byte programs, for `seconds`."""
    from harness.fuzzing import FuzzFinding, run_decoder, run_engine

    target = run_engine if name == "engine" else run_decoder
    rng = random.Random(seed)
    findings: Counter[str] = Counter()
    runs = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        data = rng.randbytes(rng.randint(0, 1200))
        try:
            target(data)
        except FuzzFinding as f:
            findings[f"{str(f)[:200]} (input {data.hex()[:200]})"] += 1
        runs += 1
    return runs, [f"{n}x {f}" for f, n in findings.items()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=int, default=300, help="per target")
    p.add_argument("--targets", nargs="+", default=list(TARGETS), choices=list(TARGETS))
    p.add_argument("--no-atheris", action="store_true", help="use the seeded random loop even if atheris exists")
    p.add_argument("--corpus", type=Path, default=FUZZ / "corpus")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    use_atheris = not args.no_atheris and importlib.util.find_spec("atheris") is not None
    total_found = 0
    for name in args.targets:
        start = time.monotonic()
        if use_atheris:
            runs, found = run_atheris(name, args.seconds, args.corpus / name, args.jobs)
        else:
            runs, found = run_random(name, args.seconds, args.seed)
        elapsed = time.monotonic() - start
        engine = "atheris" if use_atheris else "random"
        print(f"{name}: {engine}, {runs} executions in {elapsed:.0f} s ({runs / max(elapsed, 1e-9):.0f}/s), "
              f"{len(found)} findings")
        for f in found:
            print(f"  FINDING {f}")
        total_found += len(found)
    return 1 if total_found else 0


if __name__ == "__main__":
    sys.exit(main())

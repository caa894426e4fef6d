"""Random application scripts under random networks, checked after quiescence (aqueduct.testing.driver).

Each seed draws a network (loss, duplication, reordering, late delivery,
chunking, 0-RTT outcome, flow control, stream limits), an engine config and
a short script of app actions on both sides; the driver checks: delivered
exactly once or reported lost, never both; ordered channels in order; no
double ack/nack; end reasons with causes; every handle ends; no engine
state, link or timer left once all handles are dropped; no exception
escapes an engine; late calls on ended handles get their documented
outcome; credit never exceeds the bytes received. Odd seeds run with a
tiny or no discarded filter (`sim_soak.py --ghosts`), so late messages make
ghost receivers. A failure prints the shrunk script and the command that
replays it.
"""

from __future__ import annotations

import pytest

from aqueduct.testing.driver import RunResult, run_seed, shrink

SEEDS = 1000
BATCH = 100


def _report(r: RunResult) -> str:
    small = shrink(r, budget=60)
    lines = [f"seed {r.seed}: {v}" for v in r.violations[:5]]
    lines.append(f"network: {r.net}")
    lines.append(f"shrunk script ({len(small.script)} of {len(r.script)} actions), violations {small.violations[:3]}:")
    lines += [f"  {a}" for a in small.script]
    ghosts = " --ghosts" if r.seed % 2 else ""
    lines.append(f"replay: .venv/bin/python benchmarks/sim_soak.py --start {r.seed} --seeds 1{ghosts} -v")
    return "\n".join(lines)


@pytest.mark.parametrize("start", range(0, SEEDS, BATCH))
def test_random_scripts_keep_every_invariant(start: int) -> None:
    results = [run_seed(seed, strict=True, ghosts=seed % 2 == 1) for seed in range(start, start + BATCH)]
    failures = [r for r in results if not r.ok]
    assert not failures, _report(failures[0]) + f"\n({len(failures)} of {BATCH} seeds failed)"
    sent = sum(r.stats["sent"] for r in results)
    assert sent > 5 * BATCH and sum(r.stats["delivered"] for r in results) > sent // 2  # the scripts did things

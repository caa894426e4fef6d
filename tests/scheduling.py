"""The longest test files start first on the pytest-xdist workers, so both workers end at about the same time.

Theory: `--dist loadfile` hands a worker one test file at a time; the run lasts as long as the busier worker.
pytest-xdist's own order (files with the most tests first) puts the suite's longest files last, since those
start a JVM, a browser or a C++ peer for one or two tests, and one worker then runs them alone while the
others have nothing left. Handing out the longest remaining file each time (the longest-processing-time rule)
ends the workers within about a short file of each other.

How long a file takes is learnt from the runs before: the controller sums each test's setup, call and
teardown seconds and keeps them in pytest's cache (`.pytest_cache`, key DURATIONS), one entry per test id,
updated by every run (a part of the suite updates its own tests only). A file none of whose tests has
been measured yet goes by the seconds in SEED (tests/test-seconds.json, committed: a fresh clone, CI and
`-p no:cacheprovider` have no cache), and a file in neither (a new file) goes first, in pytest-xdist's own
order. `python -m tests.scheduling` rewrites SEED from this tree's cache after a full run. The measurements
only order the files: no test reads them, and a wrong one costs balance, never a result.

Files that share an expensive session fixture go to one worker as one unit (TOGETHER), so the fixture is
made once: on two workers each would make it, at the same time since both files are long.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadFileScheduling

DURATIONS = "aqueduct/test-seconds"
"""The cache key: {test id: seconds of its setup, call and teardown in the latest run that ran it}."""


TOGETHER = {
    "tests/docs/test_site.py": "the built site",
    "tests/docs/test_browser.py": "the built site",
}
"""Files that run on one worker, one after the other: they share a session fixture (tests/docs/conftest.py)."""


SEED = Path(__file__).with_name("test-seconds.json")
"""{work unit (a file, or a TOGETHER name): seconds} of one full run, for runs without a cache."""


def file_seconds(test_ids: Iterable[str], seconds: Mapping[str, float], seed: float | None = None) -> float:
    """A file's expected seconds: the sum of its measured tests; else its seed; infinite (first) when neither."""
    known = [seconds[t] for t in test_ids if t in seconds]
    return math.fsum(known) if known else math.inf if seed is None else seed


def read_seed(path: Path = SEED) -> dict[str, float]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def unit_seconds(seconds: Mapping[str, float]) -> dict[str, float]:
    """Per-test seconds summed per work unit (a file, or its TOGETHER name), as SEED keeps them."""
    units: dict[str, float] = {}
    for test_id, s in seconds.items():
        file = test_id.split("::", 1)[0]
        unit = TOGETHER.get(file, file)
        units[unit] = units.get(unit, 0.0) + s
    return {unit: round(s, 1) for unit, s in sorted(units.items())}


class LongestFileFirst(LoadFileScheduling):
    """`--dist loadfile`, handing out the longest remaining file instead of the next in collection order."""

    def __init__(self, config: pytest.Config, log: Producer | None = None) -> None:
        super().__init__(config, log)
        cache = getattr(config, "cache", None)
        self.seconds: dict[str, float] = cache.get(DURATIONS, {}) if cache is not None else {}
        self.seed = read_seed()

    def _split_scope(self, nodeid: str) -> str:
        file = super()._split_scope(nodeid)
        return TOGETHER.get(file, file)

    def _assign_work_unit(self, node: object) -> None:
        # max() keeps the first of equals: pytest-xdist's order (most tests first) among unmeasured files
        longest = max(
            self.workqueue, key=lambda scope: file_seconds(self.workqueue[scope], self.seconds, self.seed.get(scope))
        )
        self.workqueue.move_to_end(longest, last=False)
        super()._assign_work_unit(node)  # type: ignore[arg-type]


class Durations:
    """The controller's record of this run's per-test seconds, merged into the cache when the run ends."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration

    def save(self, config: pytest.Config) -> None:
        cache = getattr(config, "cache", None)
        if cache is None or hasattr(config, "workerinput") or not self.seconds:  # (a worker's controller saves)
            return
        cache.set(DURATIONS, {**cache.get(DURATIONS, {}), **{t: round(s, 3) for t, s in self.seconds.items()}})


def main() -> int:
    """Write SEED from this tree's pytest cache (after a full run of the suite)."""
    cache = Path(__file__).resolve().parents[1] / ".pytest_cache" / "v" / DURATIONS
    try:
        seconds = json.loads(cache.read_text())
    except (OSError, ValueError) as exc:
        print(f"no per-test seconds in {cache}: run the suite first ({exc})", file=sys.stderr)
        return 1
    units = unit_seconds(seconds)
    SEED.write_text(json.dumps(units, indent=0, sort_keys=True) + "\n")
    print(f"{SEED}: {len(units)} work units, {sum(units.values()):.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())

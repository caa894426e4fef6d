"""The longest test files start first on the pytest-xdist workers, so both workers end at about the same time.

Theory: `--dist loadfile` hands a worker one test file at a time; the run lasts as long as the busier worker.
pytest-xdist's own order (files with the most tests first) puts the suite's longest files last, since those
start a JVM, a browser or a C++ peer for one or two tests, and one worker then runs them alone while the
other has nothing left. Handing out the longest remaining file each time (the longest-processing-time rule)
ends the two workers within about a short file of each other.

How long a file takes is learnt from the runs before: the controller sums each test's setup, call and
teardown seconds and keeps them in pytest's cache (`.pytest_cache`, key DURATIONS), one entry per test id,
updated by every run (a part of the suite updates its own tests only). A file none of whose tests has
been measured yet (a new file, a fresh clone, `-p no:cacheprovider`) goes first, in pytest-xdist's own order.
The measurements only order the files: no test reads them, and a wrong one costs balance, never a result.

Files that share an expensive session fixture go to one worker as one unit (TOGETHER), so the fixture is
made once: on two workers each would make it, at the same time since both files are long.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

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


def file_seconds(test_ids: Iterable[str], seconds: Mapping[str, float]) -> float:
    """A file's expected seconds: the sum of its measured tests; infinite (first) when none was measured."""
    known = [seconds[t] for t in test_ids if t in seconds]
    return math.fsum(known) if known else math.inf


class LongestFileFirst(LoadFileScheduling):
    """`--dist loadfile`, handing out the longest remaining file instead of the next in collection order."""

    def __init__(self, config: pytest.Config, log: Producer | None = None) -> None:
        super().__init__(config, log)
        cache = getattr(config, "cache", None)
        self.seconds: dict[str, float] = cache.get(DURATIONS, {}) if cache is not None else {}

    def _split_scope(self, nodeid: str) -> str:
        file = super()._split_scope(nodeid)
        return TOGETHER.get(file, file)

    def _assign_work_unit(self, node: object) -> None:
        # max() keeps the first of equals: pytest-xdist's order (most tests first) among unmeasured files
        longest = max(self.workqueue, key=lambda scope: file_seconds(self.workqueue[scope], self.seconds))
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

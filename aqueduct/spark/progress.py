"""Progress while Spark works: a numbered line per step, and live task counts from Spark's status tracker.

`Progress.step(name)` prints `[i/n] name` and its duration when done. A
daemon thread polls `statusTracker()` every half second and shows the
running stages' task counts: on a terminal as a rich progress bar per stage
(tasks done of all, elapsed time) under the step lines, otherwise a line at
most every `plain_every` seconds. Every Spark job of a run shows this way:
the analysis, a `--sql` query and taking segments into the incremental
store (the recording's conversion).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pyspark import SparkContext
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID


class Progress:
    """Step lines plus a stage/task ticker."""

    def __init__(self, total: int, out: TextIO | None = None, plain_every: float = 5.0) -> None:
        """`total` steps are expected; output goes to `out` (stderr by default)."""
        self.total = total
        self.out = out or sys.stderr
        self.tty = self.out.isatty()
        self.plain_every = plain_every
        self._index = 0
        self._sc: SparkContext | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._last_plain = float("-inf")
        self._bar: RichProgress | None = None
        self._bars: dict[int, TaskID] = {}
        if self.tty:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            console = Console(file=self.out, force_terminal=True)
            columns = (TextColumn("    {task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("tasks"),
                       TimeElapsedColumn())  # fmt: skip
            self._bar = RichProgress(*columns, console=console, transient=True)
            self._bar.start()

    def watch(self, sc: SparkContext) -> None:
        """Start showing task counts of `sc`'s running stages."""
        self._sc = sc
        self._thread = threading.Thread(target=self._tick, name="aqueduct-progress", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the ticker (and the bars)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.stop()

    def note(self, text: str) -> None:
        """A free-standing line (above the bars on a terminal)."""
        with self._lock:
            if self._bar is not None:
                self._bar.console.print(text, highlight=False, markup=False)
            else:
                print(text, file=self.out, flush=True)

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Announce a step and time it."""
        self._index += 1
        start = time.monotonic()
        self.note(f"[{self._index}/{self.total}] {name} ...")
        yield
        self.note(f"[{self._index}/{self.total}] {name}: {time.monotonic() - start:.1f} s")

    def show(self, stages: list[tuple[int, int, int, int]]) -> None:
        """Show the running stages: (stage id, tasks completed, tasks in all, tasks running)."""
        with self._lock:
            if self._bar is not None:
                for stage_id in [s for s in self._bars if s not in {st[0] for st in stages}]:
                    self._bar.remove_task(self._bars.pop(stage_id))
                for stage_id, done, total, running in stages:
                    if stage_id not in self._bars:
                        self._bars[stage_id] = self._bar.add_task(f"stage {stage_id}", total=total)
                    self._bar.update(self._bars[stage_id], completed=done, total=total,
                                     description=f"stage {stage_id} ({running} running)")  # fmt: skip
                return
            if not stages or time.monotonic() - self._last_plain < self.plain_every:
                return
            self._last_plain = time.monotonic()
            parts = [f"stage {i}: {d}/{t} tasks ({r} running)" for i, d, t, r in stages]
            print(f"    {'; '.join(parts)}  [{time.monotonic() - self._started:.0f} s]", file=self.out, flush=True)

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            if self._sc is None:
                continue
            try:
                tracker = self._sc.statusTracker()
                infos = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            except Exception:  # the context may be stopping; the ticker is best effort
                continue
            self.show([(i.stageId, i.numCompletedTasks, i.numTasks, i.numActiveTasks) for i in infos if i is not None])

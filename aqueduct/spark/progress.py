"""Progress while Spark works: a numbered line per step, and live task counts from Spark's status tracker.

`Progress.step(name)` prints `[i/n] name` and its duration when done. A
daemon thread polls `statusTracker()` every half second and shows the
running stages' task counts: rewritten in place on a terminal, otherwise a
line at most every `plain_every` seconds.
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

    def watch(self, sc: SparkContext) -> None:
        """Start showing task counts of `sc`'s running stages."""
        self._sc = sc
        self._thread = threading.Thread(target=self._tick, name="aqueduct-progress", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the ticker."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._clear()

    def note(self, text: str) -> None:
        """A free-standing line."""
        with self._lock:
            self._clear()
            print(text, file=self.out, flush=True)

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Announce a step and time it."""
        self._index += 1
        start = time.monotonic()
        self.note(f"[{self._index}/{self.total}] {name} ...")
        yield
        self.note(f"[{self._index}/{self.total}] {name}: {time.monotonic() - start:.1f} s")

    def _clear(self) -> None:
        if self.tty:
            self.out.write("\r\033[K")
            self.out.flush()

    def _tick(self) -> None:
        last_plain = 0.0
        while not self._stop.wait(0.5):
            if self._sc is None:
                continue
            try:
                tracker = self._sc.statusTracker()
                infos = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            except Exception:  # the context may be stopping; the ticker is best effort
                continue
            parts = [
                f"stage {i.stageId}: {i.numCompletedTasks}/{i.numTasks} tasks ({i.numActiveTasks} running)"
                for i in infos
                if i is not None
            ]
            if not parts:
                continue
            text = f"    {'; '.join(parts)}  [{time.monotonic() - self._started:.0f} s]"
            with self._lock:
                if self.tty:
                    self.out.write("\r\033[K" + text)
                    self.out.flush()
                elif time.monotonic() - last_plain >= self.plain_every:
                    last_plain = time.monotonic()
                    print(text, file=self.out, flush=True)

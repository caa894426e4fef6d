"""Progress: a rich bar per running Spark stage on a terminal, plain lines elsewhere."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any

from aqueduct.spark.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_per_stage() -> None:
    out = _Terminal()
    progress = Progress(2, out=out)
    with progress.step("reading the recording"):
        progress.show([(3, 4, 10, 2)])
        assert progress._bar is not None
        progress._bar.refresh()
        progress.show([(3, 10, 10, 0), (4, 1, 8, 1)])
        progress._bar.refresh()
        progress.show([(4, 8, 8, 0)])
        progress._bar.refresh()
    progress.close()
    text = out.getvalue()
    assert "━" in text and "4/10" in text and "1/8" in text and "stage 3 (2 running)" in text
    assert "[1/2] reading the recording ..." in text and "[1/2] reading the recording:" in text
    assert list(progress._bars) == [4]  # a finished stage's bar goes


def test_plain_output_gets_a_line_at_most_every_few_seconds() -> None:
    out = io.StringIO()
    progress = Progress(1, out=out, plain_every=3600.0)
    progress.show([(1, 2, 5, 1)])
    progress.show([(1, 3, 5, 1)])  # within plain_every: not printed
    progress.close()
    assert out.getvalue().count("stage 1:") == 1 and "2/5 tasks (1 running)" in out.getvalue()
    assert "━" not in out.getvalue()


def test_the_ticker_shows_a_running_spark_stage_as_a_bar(spark: Any, tmp_path: Path) -> None:
    gate = str(tmp_path / "go")

    def held(x: int) -> int:  # runs in a Python worker: waits until the test has seen the stage running
        import os
        import time

        deadline = time.monotonic() + 120
        while not os.path.exists(gate) and time.monotonic() < deadline:
            time.sleep(0.02)
        return x

    out = _Terminal()
    progress = Progress(1, out=out)
    progress.watch(spark.sparkContext)
    result: list[int] = []
    job = threading.Thread(
        target=lambda: result.extend(spark.sparkContext.parallelize(range(2), 2).map(held).collect())
    )
    try:
        with progress.step("a held job"):
            job.start()
            deadline = time.monotonic() + 120
            while "(2 running)" not in out.getvalue() and time.monotonic() < deadline:
                assert progress._bar is not None
                progress._bar.refresh()
                time.sleep(0.05)  # polling the rendered output for the ticker's update
            text = out.getvalue()
    finally:
        Path(gate).touch()
        job.join()
        progress.close()
    assert result == [0, 1]
    assert "(2 running)" in text and "0/2" in text and "━" in text
    assert "[1/1] a held job:" in out.getvalue()

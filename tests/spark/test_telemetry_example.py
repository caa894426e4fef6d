"""examples/spark_telemetry.py: windows printed in order, and an end without a traceback."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import aqueduct

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import spark_telemetry  # noqa: E402


async def test_hub_applies_a_committed_batch_in_the_topics_order() -> None:
    hub = spark_telemetry.Hub(order_by={"w": "start"})
    rows_tx, rows_rx = aqueduct.channel()
    done_tx, done_rx = aqueduct.channel()
    for start in (12, 10, 11):  # as a micro-batch's partitions hand them over
        await rows_tx.send({"start": start})
    await rows_tx.finish()
    await hub.request({"op": "publish", "topic": "w", "sink": "s", "batch_id": 0, "rows": rows_rx, "done": done_tx})
    assert await done_rx.recv() == {"batch_id": 0, "applied": True}
    assert hub.topics["w"] == [{"start": 10}, {"start": 11}, {"start": 12}]


@pytest.mark.requires_system("java")
def test_example_prints_windows_in_order_and_ends_without_a_traceback() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1"}
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "spark_telemetry.py"), "--windows", "4",
                             "--seconds", "400"], capture_output=True, text=True, env=env, timeout=560)  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "Traceback" not in output and "EOFError" not in output, output[-4000:]
    seconds = re.findall(r"^  window (\d\d:\d\d:\d\d):", result.stdout, re.MULTILINE)
    assert len(seconds) >= 4, result.stdout  # --seconds is only a guard: it stops after 4 windows
    of_day = [int(h) * 3600 + int(m) * 60 + int(s) for h, m, s in (text.split(":") for text in seconds)]
    steps = [(b - a) % 86400 for a, b in itertools.pairwise(of_day)]  # (midnight may pass)
    assert all(0 < step < 3600 for step in steps), seconds  # each window later than the one before

"""A recorder killed with SIGKILL leaves only complete, readable segments."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from aqueduct.recording import read_events, sealed_segments

CHILD = r"""
import sys
from aqueduct.recording import Kind, Recorder, make_row
rec = Recorder(sys.argv[1], segment_bytes=1, batch_rows=50, flush_seconds=0.001)
n = 0
announced = False
while True:
    for _ in range(50):
        rec.record(make_row(n, Kind.MESSAGE_SENT, "c", channel=4, number=n, length=8))
        n += 1
    if not announced and len(rec.sealed) >= 3:
        print("ready", flush=True)
        announced = True
    if n % 5000 == 0:
        rec.flush()
"""


def test_sigkill_loses_at_most_the_open_segment(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    segments = sealed_segments(tmp_path)
    assert len(segments) >= 3
    numbers = [e["number"] for e in read_events(tmp_path)]
    # sealed segments hold a gap-free prefix of what was recorded
    assert numbers == list(range(len(numbers)))

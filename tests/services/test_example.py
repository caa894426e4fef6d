"""examples/services.py runs as a user would: two processes, every step of the calculator shown."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_services_example_runs_across_two_processes() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "services.py")], capture_output=True,
                            text=True, timeout=90, env=env, cwd=ROOT / "examples")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    for line in ("client: add(2, 40) = 42", "client: not sent: $.a expected int", "count(4) streams [0, 1, 2, 3]",
                 "listener heard 'tick 2'", "declared error arrived as itself", "slow(30) timed out",
                 "still served: add(1, 1) = 2", "server: slow() cancelled: its caller gave up"):
        assert line in result.stdout, result.stdout

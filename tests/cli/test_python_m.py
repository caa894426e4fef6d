"""`python -m aqueduct` is the same command as the console script."""

from __future__ import annotations

import json
import subprocess
import sys


def test_python_m_aqueduct_runs_the_cli() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "aqueduct", "wire", "decode", "0405"], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == {"frames": [{"type": "SentUnreliable", "count": 5}]}


def test_python_m_aqueduct_reports_bad_input_with_exit_2() -> None:
    out = subprocess.run([sys.executable, "-m", "aqueduct", "wire", "decode", "0a"], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip() and "\n" not in out.stderr.strip()

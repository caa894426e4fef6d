"""Tests that need something outside the Python venv ask for it here: `requires_system("chromium")`.

Theory: scripts/setup-system.sh is the one place that knows each piece (chromium, openweaver, netns, java,
aeron): what it is, how to tell it is present (`--check PIECE`) and how to install it. This module asks
that script and never installs anything. A missing piece skips the test with the script's reason and the
command that enables it; with AQUEDUCT_REQUIRE_SYSTEM=1 (.ci/run sets it) the test fails instead, so CI
never hides a skipped one. Answers are cached per process (one `--check` per piece per worker).
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP_SYSTEM = ROOT / "scripts" / "setup-system.sh"
REQUIRE_ENV = "AQUEDUCT_REQUIRE_SYSTEM"


@functools.cache
def check(piece: str, script: Path = SETUP_SYSTEM) -> tuple[bool, str]:
    """(present, what `setup-system.sh --check PIECE` printed: what it found, or why not and how to enable)."""
    out = subprocess.run(["bash", str(script), "--check", piece], capture_output=True, text=True, timeout=120)
    text = (out.stdout.strip() or out.stderr.strip()).splitlines()
    return out.returncode == 0, text[-1] if text else f"setup-system.sh --check {piece} exited {out.returncode}"


def requires_system(piece: str, script: Path = SETUP_SYSTEM) -> str:
    """What the check found (a path, a version) if PIECE is present; otherwise skip the test with the reason
    and the enabling command, or fail it when AQUEDUCT_REQUIRE_SYSTEM=1."""
    present, text = check(piece, script)
    if present:
        return text
    message = f"needs system piece '{piece}': {text}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message} [{REQUIRE_ENV}=1: a missing system piece fails the run]", pytrace=False)
    pytest.skip(message)

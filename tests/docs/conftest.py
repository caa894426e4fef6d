"""The built site, shared by the site and browser tests: `mkdocs build --strict` once per session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as CI builds it (strict: any warning, a missing docstring or a broken link fails it)."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                           capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-5000:]
    assert "WARNING" not in build.stderr, build.stderr[-5000:]
    return out

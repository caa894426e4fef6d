"""A Spark process's scratch directory (its SPARK_CONF_DIR and the JVM's temporary files) is removed when it
exits; one killed before its atexit ran is reclaimed by the next (`reclaim_stale_scratch`), never a live
process's and never another user's."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from aqueduct.spark.session import SCRATCH_PREFIX, reclaim_stale_scratch


def test_a_killed_processs_scratch_is_reclaimed_and_a_live_ones_kept() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{child.pid}-"))
        child.kill()
        child.wait()
        dead = live  # (the same directory: its owner is now gone)
        mine = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
        try:
            removed = reclaim_stale_scratch()
            assert dead in removed and not dead.exists()
            assert mine.exists() and mine not in removed
        finally:
            mine.rmdir()
    finally:
        if child.poll() is None:
            child.kill()

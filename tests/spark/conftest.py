"""One local SparkSession for every Spark test of the run (starting a JVM costs ~10 s), stopped at the end."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest

from aqueduct.spark.session import reclaim_stale_scratch, remove_scratch, spark_session
from aqueduct.spark.stream import register
from tests.system_deps import requires_system


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    requires_system("java")
    # C1-only JIT: a short-lived test JVM starts and warms up much faster (tests only)
    fast = {f"spark.{r}.extraJavaOptions": "-XX:TieredStopAtLevel=1" for r in ("driver", "executor")}
    session = spark_session("local[2]", app_name="aqueduct-tests", config=fast)
    register(session)
    yield session
    session.stop()
    remove_scratch()  # (a pytest-xdist worker ends without running atexit: its JVM's files go now)
    reclaim_stale_scratch()  # (and what the Spark processes the tests killed or ran as subprocesses left)
    # pyspark's SIGINT handler (cancel the jobs) outlives the session and then raises from a dead context when a
    # pytest-xdist worker is interrupted at shutdown: give SIGINT back to Python
    signal.signal(signal.SIGINT, signal.default_int_handler)

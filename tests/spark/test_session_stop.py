"""Stopping a Spark session the pipeline started waits for the work still running, a cancelled job's included.

A job that ends early (cancelled, or an adaptive plan that returned before a stage of the other side ended) leaves
tasks running on the executors after the status tracker lists no job. Stopping under them made the driver log
`RejectedExecutionException` from `statusUpdate` (or a missing broadcast block) with stack traces on
spark-submit's console after a run that succeeded (seen in CI: tests/spark/test_spark_submit.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from aqueduct.spark.session import running_tasks, settle_session

GROUP = "aqueduct-settle-test"
WAIT_S = 60.0


def _slow(rows: Iterator[int]) -> Iterator[int]:
    time.sleep(WAIT_S)  # (a task that runs until it is killed)
    yield sum(1 for _ in rows)


def _wait_for(condition: Any) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "Spark did not get there within a minute"
        time.sleep(0.05)  # polling Spark's scheduler, which has no event to wait on from Python


def test_settling_waits_for_the_tasks_of_a_cancelled_job(spark: Any) -> None:
    sc = spark.sparkContext
    ended: list[BaseException] = []

    def job() -> None:
        sc.setJobGroup(GROUP, "tasks that sleep until cancelled")
        try:
            sc.parallelize(range(10), 2).mapPartitions(_slow).collect()
        except Exception as exc:  # (the cancellation, as py4j reports it)
            ended.append(exc)

    thread = threading.Thread(target=job)
    thread.start()
    _wait_for(lambda: running_tasks(spark) == 2)
    sc.cancelJobGroup(GROUP)
    thread.join()
    assert ended and "cancel" in str(ended[0]).lower()
    assert not sc.statusTracker().getActiveJobsIds()  # the job is over for the status tracker...
    assert running_tasks(spark) > 0  # ...while its tasks still run: what stopping raced with

    settle_session(spark)
    assert running_tasks(spark) == 0

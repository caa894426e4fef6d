"""Stopping a Spark session the pipeline started waits for the work still running, a cancelled job's included.

A job that ends early (cancelled, or an adaptive plan that returned before a stage of the other side ended) leaves
tasks running on the executors after the status tracker lists no job. Stopping under them made the driver log
`RejectedExecutionException` from `statusUpdate` (or a missing broadcast block) with stack traces on
spark-submit's console after a run that succeeded (seen in CI: tests/spark/test_spark_submit.py).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from aqueduct.spark.session import running_tasks, settle_session

GROUP = "aqueduct-settle-test"
SLEEP_MS = 8000
"""How long each task runs once started: a JVM task that a cancellation does not interrupt (a job group's default,
`interruptOnCancel=False`) runs on until its row is done, whatever the machine's load, so the test sees its
tasks outlive their cancelled job (a Python task is killed by its monitor thread after
`spark.python.task.killTimeout`, 2 s: under load the test could miss that window)."""
WAIT_S = 60.0


def _wait_for(condition: Any) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "Spark did not get there within a minute"
        time.sleep(0.05)  # polling Spark's scheduler, which has no event to wait on from Python


def test_settling_waits_for_the_tasks_of_a_cancelled_job(spark: Any) -> None:
    sc = spark.sparkContext
    ended: list[BaseException] = []

    def job() -> None:
        sc.setJobGroup(GROUP, "tasks that sleep through their cancellation")
        try:
            sleep = f"reflect('java.lang.Thread', 'sleep', cast({SLEEP_MS} as bigint))"
            spark.range(0, 2, 1, 2).selectExpr(sleep).collect()
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

    settle_session(spark, settle=WAIT_S)
    assert running_tasks(spark) == 0

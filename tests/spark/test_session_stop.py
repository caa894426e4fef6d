"""Stopping a Spark session the pipeline started waits for the work still running, a cancelled job's included.

A job that ends early (cancelled, or an adaptive plan that returned before a stage of the other side ended) leaves
tasks running on the executors after the status tracker lists no job. Stopping under them made the driver log
`RejectedExecutionException` from `statusUpdate` (or a missing broadcast block) with stack traces on
spark-submit's console after a run that succeeded (seen in CI: tests/spark/test_spark_submit.py).

The test holds that window open itself: its tasks are JVM sleeps far longer than the test, which a job group's
cancellation does not interrupt (`interruptOnCancel=False`, the default), and it ends them (by interrupting their
threads) only once `settle_session` has seen them running. It cancels only once each task has reached its sleep
(it marks a JVM system property on the way: local mode's executors run in the driver's JVM): a task the scheduler
has launched but that has not started its row yet dies at once of the cancellation: that, not the load, is
why an 8 s sleep missed the window in CI ('assert 0 > 0'); with a 600 s sleep, a cancel as soon as the
scheduler counted 2 tasks launched still missed it in 2 runs of 8.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest
from py4j.protocol import Py4JError

import aqueduct.spark.session as session
from aqueduct.spark.session import running_tasks, settle_session

GROUP = "aqueduct-settle-test"
TASKS = 2
"""The job's tasks: one row each, as many as the shared session's cores (local[2]), so all run at once."""
MARK = "aqueduct.settle-test.sleeping."
"""A task sets `MARK + <its row>` in the JVM's system properties as it starts to sleep."""
SLEEP_MS = 120_000
"""Each task's sleep: the test's steps between the marks and its interrupt take about a second, so only the
interrupt ends it; were the interrupt to fail (a Spark without `taskIdToTaskSetManager`), the shared session's
two cores would be free again 2 minutes later, not held through the suite."""
WAIT_S = 60.0


def _wait_for(condition: Any) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "Spark did not get there within a minute"
        time.sleep(0.05)  # polling Spark's scheduler, which has no event to wait on from Python


def _sleeping(spark: Any) -> int:
    system = spark.sparkContext._jvm.java.lang.System
    return sum(system.getProperty(f"{MARK}{row}") is not None for row in range(TASKS))


def _interrupt_running_tasks(spark: Any) -> int:
    """Kill every task the scheduler runs, interrupting its thread (what a cancellation here does not do)."""
    jsc = spark.sparkContext._jsc
    task_ids = list(jsc.sc().taskScheduler().taskIdToTaskSetManager().keySet())
    for task_id in task_ids:
        jsc.sc().killTaskAttempt(task_id, True, "the test ends its sleeping tasks")
    return len(task_ids)


def test_settling_waits_for_the_tasks_of_a_cancelled_job(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sc = spark.sparkContext
    ended: list[BaseException] = []

    def job() -> None:
        sc.setJobGroup(GROUP, "tasks that sleep through their cancellation")
        try:
            mark = f"reflect('java.lang.System', 'setProperty', concat('{MARK}', cast(id as string)), 'yes')"
            duration = f"{SLEEP_MS} + coalesce(length({mark}), 0) * 0"  # (evaluated first: marks, then sleeps)
            sleep = f"reflect('java.lang.Thread', 'sleep', cast({duration} as bigint))"
            spark.range(0, TASKS, 1, TASKS).selectExpr(sleep).collect()
        except Exception as exc:  # (the cancellation, as py4j reports it)
            ended.append(exc)

    thread = threading.Thread(target=job)
    thread.start()
    try:
        _wait_for(lambda: _sleeping(spark) == TASKS)
        sc.cancelJobGroup(GROUP)
        thread.join()
        assert ended and "cancel" in str(ended[0]).lower()
        assert not sc.statusTracker().getActiveJobsIds()  # the job is over for the status tracker...
        assert running_tasks(spark) == TASKS  # ...while its tasks still run: what stopping raced with

        seen: list[int] = []

        def observed(spark: Any) -> int:  # settle_session's view of the tasks; the first sighting ends them
            count = running_tasks(spark)
            if count and not seen:
                assert _interrupt_running_tasks(spark) == TASKS
            seen.append(count)
            return count

        monkeypatch.setattr(session, "running_tasks", observed)
        settle_session(spark, settle=WAIT_S)
        assert seen and seen[0] == TASKS  # it saw the cancelled job's tasks and did not return...
        assert seen[-1] == 0  # ...until they had ended
        assert running_tasks(spark) == 0
    finally:
        if thread.is_alive() or running_tasks(spark):
            sc.cancelJobGroup(GROUP)
            with contextlib.suppress(Py4JError):  # (the failure that brought us here is the one to see)
                _interrupt_running_tasks(spark)
        thread.join()
        for row in range(TASKS):
            sc._jvm.java.lang.System.clearProperty(f"{MARK}{row}")

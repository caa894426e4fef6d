"""benchmarks/channel_instructions.py (the per-call instruction count, typed and `--untyped`) measures what it
says: every call is a request with a new reply channel, answered by the server, on one connection; counted on
the server's side (its `Tally`), for both variants and with calls in flight; and its virtual clock makes a run
take the same loop turns whatever other threads do. The instrument's figures are instruction counts under
callgrind; here it runs on the test's loop, a few calls, nothing timed."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from aqueduct.bench.tally import Tally
from aqueduct.quic.certs import DevCerts
from benchmarks.channel_instructions import VirtualClockLoop, run

WARMUP, CALLS = 8, 20


@pytest.mark.parametrize("typed", [True, False], ids=["typed", "untyped"])
@pytest.mark.parametrize("flight", [1, 4])
async def test_every_call_is_a_new_channel_answered_by_the_server(certs: DevCerts, typed: bool, flight: int) -> None:
    tally = Tally()
    await run(certs.cert.parent, WARMUP, CALLS, flight, typed=typed, tally=tally)
    made = (WARMUP // flight + CALLS // flight) * flight
    assert tally.accepted == 1
    assert (tally.calls, tally.channels) == (made, made)


class _SlowJobs(ThreadPoolExecutor):
    """An executor whose every job starts late, as a slow address lookup would (the delay is the job's, in its
    thread: nothing waits on it)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        def late() -> Any:
            time.sleep(0.05)
            return fn(*args, **kwargs)

        return super().submit(late)


def _turns(certs: DevCerts, executor: ThreadPoolExecutor | None = None) -> int:
    loop = VirtualClockLoop()
    if executor is not None:
        loop.set_default_executor(executor)
    try:
        loop.run_until_complete(run(certs.cert.parent, WARMUP, CALLS, 1))
    finally:
        loop.close()
    return loop.turns


def test_the_virtual_clock_run_takes_the_same_turns_however_long_another_thread_takes(certs: DevCerts) -> None:
    """The instrument's start-up is not the executor's timing: `serve()` looks its address up in the executor's
    thread, and a loop that turned while it waited counted turns (and instructions) that depended on that
    thread, which the difference of two runs does not cancel (same-code runs differed by up to 5%)."""
    quick = _turns(certs)
    assert quick == _turns(certs, _SlowJobs(max_workers=1)) == _turns(certs)
    assert quick > (WARMUP + CALLS) * 2  # (it ran the calls: a request and its answer each take turns)

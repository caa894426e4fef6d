"""The sink is exactly once across a crash: a query killed after the peer applied a batch but before the sink
noted it replays the batch on restart, and the peer's commit keyed by batch id drops the repeat.

The crash kills every process of the query's session, not only its process group: PySpark's daemons (and the
workers they fork, among them the sink runner waiting for the held commit reply) move to process groups of their
own and die only once they see the JVM's pipe close. A sink worker still alive when the reply is released notes
the batch in the ledger after the "crash", the restarted query then skips it, and no repeat ever comes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path

import psutil
import pytest

from aqueduct.quic.certs import DevCerts

from .publisher import Publisher

pytestmark = pytest.mark.requires_system("java")

GUARD = 180.0
CHILD = Path(__file__).with_name("sink_child.py")


@pytest.fixture
def publisher(certs: DevCerts) -> Iterator[Publisher]:
    with Publisher(certs) as pub:
        yield pub


def _start(publisher: Publisher, certs: DevCerts, base: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2]))
    with open(base / f"child-{time.monotonic_ns()}.log", "wb") as log:  # (the child keeps its own descriptor)
        return subprocess.Popen([sys.executable, str(CHILD), publisher.url, str(certs.ca), str(base)], env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip


def _session(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """The live processes of the query's session (the child is its leader): driver, JVM, PySpark daemons, workers."""
    members = []
    for p in psutil.process_iter():
        with suppress(psutil.NoSuchProcess, ProcessLookupError, PermissionError):
            if os.getsid(p.pid) == proc.pid and p.status() != psutil.STATUS_ZOMBIE:
                members.append(p)
    return members


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """A crash: SIGKILL to every process of the query's session, and return only once none of them can act."""
    deadline = time.monotonic() + GUARD
    while members := _session(proc):
        assert time.monotonic() < deadline, f"processes of the killed query survive: {members}"
        for p in members:
            with suppress(psutil.NoSuchProcess):
                p.send_signal(signal.SIGKILL)
        psutil.wait_procs(members, timeout=1)  # gone, or zombies (reaped by their parent, not by us): re-checked
    proc.wait(timeout=30)


def _until(condition: Callable[[], bool], what: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + GUARD
    while not condition():
        assert proc.poll() is None, f"the query process exited with {proc.returncode} waiting for {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)  # polling a condition, with a failure guard


def test_a_batch_applied_before_a_crash_is_not_applied_again(
    publisher: Publisher, certs: DevCerts, tmp_path: Path
) -> None:
    publisher.add("telemetry", [{"i": i} for i in range(30)])
    publisher.hold_replies = True
    first = _start(publisher, certs, tmp_path)
    try:
        _until(publisher.replies_held.is_set, "the first batch applied", first)
        applied_before_crash = len(publisher.published)
        assert applied_before_crash > 0
    finally:
        _kill(first)  # after the peer applied the batch, before the sink heard so (no ledger note, no Spark commit)
    assert not _session(first)  # nothing of the first query can hear the reply released next and note the batch
    publisher.release.set()
    ledger = tmp_path / "ledger"
    assert str(publisher.held_batch) not in (ledger.read_text().split() if ledger.exists() else [])
    publisher.add("telemetry", [{"i": i} for i in range(30, 45)])
    second = _start(publisher, certs, tmp_path)
    try:
        _until(lambda: len(publisher.published) >= 45 and publisher.repeats >= 1, "every row, and the repeat", second)
    finally:
        _kill(second)
    offsets = sorted(row["offset"] for _batch, row in publisher.rows())
    assert offsets == list(range(45))  # each row applied exactly once
    assert publisher.repeats >= 1  # the crashed batch was sent again, and dropped by the commit key

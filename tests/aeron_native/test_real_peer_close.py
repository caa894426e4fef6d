"""Closing a RealPeer leaves its stdout to the reader thread, which closes it at EOF.

`close()` used to close the pipes itself while the reader could be between two lines; its next read then raised
`ValueError: I/O operation on closed file` in the thread (pytest's PytestUnhandledThreadExceptionWarning in
test_interop.py). Here the reader is held inside its queue's `put` while `close()` runs, which makes that
interleaving certain; the peer is a stand-in script that needs no Aeron.
"""

from __future__ import annotations

import queue
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from aeron_compat.native import interop

STAND_IN = """
import sys
for n in range(3):
    print('{"event": "line", "n": %d}' % n, flush=True)
for command in sys.stdin:
    if command.strip() == "exit":
        break
"""


class HeldQueue(queue.Queue[dict[str, Any]]):
    """A queue whose first `put` waits until the test releases it."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def put(self, item: dict[str, Any], block: bool = True, timeout: float | None = None) -> None:
        if not self.entered.is_set():
            self.entered.set()
            assert self.release.wait(60), "the test did not release the reader"
        super().put(item, block, timeout)


class HeldPeer(interop.RealPeer):
    """A RealPeer whose reader queues its lines into a HeldQueue."""

    def __init__(self, held: HeldQueue, python: Path, **cfg: Any) -> None:
        self.held = held
        super().__init__(python, **cfg)

    @property
    def events(self) -> queue.Queue[dict[str, Any]]:
        return self.held

    @events.setter
    def events(self, value: queue.Queue[dict[str, Any]]) -> None:
        pass  # (RealPeer's own queue: the held one stands in for it)


def test_close_while_the_reader_is_between_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    monkeypatch.setattr(interop, "PEER_SCRIPT", script)
    held = HeldQueue()
    failures: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))

    peer = HeldPeer(held, Path(sys.executable), role="stand-in")
    assert held.entered.wait(60)  # the reader has read the first line and is held before reading the next
    peer.send("exit")
    assert peer.proc.wait(60) == 0  # the peer has exited (so close's own wait cannot time out and kill it)...
    peer.close(timeout=0.2)  # ...and the reader, still held, cannot reach EOF within close's wait for it
    held.release.set()
    peer._reader.join(60)
    assert not peer._reader.is_alive()
    assert failures == []
    events = [held.get_nowait()["event"] for _ in range(held.qsize())]
    assert events == ["line", "line", "line", "eof"]
    assert peer.proc.stdout is not None and peer.proc.stdout.closed

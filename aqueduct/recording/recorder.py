"""The Recorder: a cheap `record(row)` on the event loop, Parquet writing on a thread.

`record` appends a row tuple to a deque (atomic under the GIL, no lock) and
returns. A writer thread wakes every `flush_seconds` (or early, once
`batch_rows` rows are waiting); it types each full batch of rows as one
Arrow table and appends it as a row group to the open segment (small row
groups cost several times more per row, so a partial batch waits until the
segment is due, a flush, or close). The open segment is sealed (atomically
published, see segments.py) when it reaches `segment_bytes` or
`segment_seconds`, and on `close()`. Rows still in memory or in the open
segment are what a crash loses; neither is readable before the seal anyway.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections import deque
from pathlib import Path
from types import TracebackType

from .schema import Row, rows_to_table
from .segments import OpenSegment
from .tap import ConnectionTap

log = logging.getLogger(__name__)

_recorder_ids = itertools.count()
DEFAULT_PAYLOAD_LIMIT = 64 << 10
"""Largest payload stored per message with `payloads=True` (bytes)."""


class Recorder:
    """Writes event rows into a recording directory as rotating Parquet segments."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        segment_bytes: int = 64 << 20,
        segment_seconds: float = 60.0,
        flush_seconds: float = 0.25,
        batch_rows: int = 16384,
        payloads: bool = False,
        compression: str = "snappy",
        payload_limit: int = DEFAULT_PAYLOAD_LIMIT,
    ) -> None:
        """Start the writer thread; the directory is created if needed."""
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.segment_seconds = segment_seconds
        self.flush_seconds = flush_seconds
        self.batch_rows = batch_rows
        self.payloads = payloads
        """Whether taps store message payload bytes (off by default: lengths only)."""
        self.payload_limit = payload_limit
        """With `payloads`: a payload longer than this many bytes is not stored (its row keeps the length)."""
        self.compression = compression
        self._prefix = f"rec-{time.time_ns()}-{os.getpid()}-{next(_recorder_ids)}"
        self._seq = itertools.count()
        self._rows: deque[Row] = deque()
        self._wake = threading.Event()
        self._signalled = False
        self._closing = False
        self._flush_requested = False
        self._flushed = threading.Condition()
        self._written = 0
        self._appended = 0
        self.error: BaseException | None = None
        """The first failure of the writer thread; recording stops after it."""
        self.sealed: list[Path] = []
        self._segment: OpenSegment | None = None
        self._thread = threading.Thread(target=self._run, name="aqueduct-recorder", daemon=True)
        self._thread.start()

    # ---- hot path ----
    def record(self, row: Row) -> None:
        """Queue one event row (see schema.COLUMNS); never blocks, never does I/O. Call from one thread."""
        rows = self._rows
        rows.append(row)
        self._appended += 1
        if len(rows) >= self.batch_rows and not self._signalled:
            self._signalled = True
            self._wake.set()

    def connection(
        self, side: str, peer: str = "", connection_id: str | None = None, link: str | None = None
    ) -> ConnectionTap:
        """A tap for one connection: the API layer reports that connection's traffic through it. `link`: the
        identity both sides of the connection share (pairs the two sides' recordings)."""
        return ConnectionTap(self, side=side, peer=peer, connection_id=connection_id, link=link)

    # ---- control ----
    def flush(self, timeout: float | None = 10.0) -> None:
        """Wait until every row recorded so far is in the open segment (not yet sealed)."""
        target = self._appended
        self._flush_requested = True
        self._wake.set()
        with self._flushed:
            self._flushed.wait_for(lambda: self._written >= target or self.error is not None, timeout)
        self._raise_error()

    def wait_sealed(self, count: int, timeout: float | None = 10.0) -> bool:
        """Wait until at least `count` segments have been sealed; False on timeout."""
        with self._flushed:
            return self._flushed.wait_for(lambda: len(self.sealed) >= count or self.error is not None, timeout)

    def close(self) -> None:
        """Write what is queued, seal the open segment and stop the thread."""
        if not self._closing:
            self._closing = True
            self._wake.set()
            self._thread.join()
        self._raise_error()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _raise_error(self) -> None:
        if self.error is not None:
            raise RuntimeError(f"recorder for {self.directory} failed: {self.error!r}") from self.error

    # ---- writer thread ----
    def _run(self) -> None:
        try:
            while True:
                self._wake.wait(self.flush_seconds)
                self._wake.clear()
                self._signalled = False
                closing, forced = self._closing, self._flush_requested
                self._flush_requested = False
                if self._rows and self._segment is None:
                    self._open()  # the segment's age starts with its first row
                # small row groups cost far more per row: write full batches, the rest only when due
                due = closing or forced or (self._segment is not None and self._segment.age >= self.segment_seconds)
                self._write_pending(everything=due)
                if closing:
                    break
                if self._segment is not None and (
                    self._segment.size >= self.segment_bytes or self._segment.age >= self.segment_seconds
                ):
                    self._seal()
            self._seal()
        except BaseException as exc:  # the thread must report, not die silently
            log.exception("recorder writer failed; recording stopped")
            self.error = exc
            self._rows.clear()
        finally:
            with self._flushed:
                self._flushed.notify_all()

    def _open(self) -> None:
        self._segment = OpenSegment(self.directory, f"{self._prefix}-{next(self._seq):06d}", self.compression)

    def _write_pending(self, everything: bool) -> None:
        rows = self._rows
        while len(rows) >= self.batch_rows or (everything and rows):
            n = min(len(rows), self.batch_rows)
            batch = [rows.popleft() for _ in range(n)]
            if self._segment is None:
                self._open()
            assert self._segment is not None
            self._segment.write(rows_to_table(batch))
            with self._flushed:
                self._written += n
                self._flushed.notify_all()
            if self._segment.size >= self.segment_bytes:
                self._seal()

    def _seal(self) -> None:
        if self._segment is not None:
            path = self._segment.seal()
            self._segment = None
            with self._flushed:
                self.sealed.append(path)
                self._flushed.notify_all()

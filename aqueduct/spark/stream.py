"""The `aqueduct` PySpark data source: a live channel as a stream source, and a channel as a stream sink.

Source (`spark.readStream.format("aqueduct")`, a SimpleDataSourceStreamReader):
the planner process connects to `url`, sends `{"op": "subscribe", "topic":
T, "from": N, "updates": <Sender>}` on the entrypoint and receives on the
channel. Offsets are message counts (`{"offset": n}`: n messages of the
topic consumed). A message is spooled to disk (`spool` directory, one
Parquet file per offset range, temp name + rename) before it is offered to
Spark, and stays there until Spark commits past it; a replayed micro-batch
(Spark restarting from its checkpoint) is read back from the spool by
`readBetweenOffsets`, so it is identical. After a restart the subscription
asks for `from` = the spooled count, so a publisher that can resume sends
each message once. The live connection lives in a module-level registry of
the planner process: the reader object is pickled to executors and holds no
socket or thread.

Sink (`df.writeStream.format("aqueduct")`, a DataSourceStreamWriter),
exactly once by an idempotent commit keyed by the batch id: tasks pass
their rows to the driver-side `commit(messages, batchId)`, which sends
`{"op": "publish", "topic": T, "sink": S, "batch_id": B, "rows": <Receiver>,
"done": <Sender>}`, then one message per row (a dict) on `rows`, finishes
it, and waits for the peer's `{"batch_id": B, "applied": bool}` on `done`
before it notes B in the `ledger` file. The peer's side of the contract:
it applies a batch only once its `rows` channel finished (a batch cut
short by a crash is dropped whole), and applies each (S, T, B) at most once,
answering `applied: false` for a repeat. A crash after the peer applied B
but before the ledger noted it makes Spark replay B; the peer drops the
repeat, so every row is applied exactly once. The ledger only saves
resending batches known to be applied. S is the `sink` option, by default
the ledger's absolute path (one per query, like its checkpoint).

Options: url (required), topic, ca (PEM path), fingerprint, timeout
(seconds, default 30); spool (source, required) and ledger (sink, a file,
required): both belong to one query, like its checkpoint; sink (sink id).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamWriter,
    SimpleDataSourceStreamReader,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from ..errors import ChannelFinished

SOURCE_SCHEMA = "offset BIGINT, value STRING, delivery STRING, number BIGINT, received_ns BIGINT"
SPOOL_SCHEMA = pa.schema(
    [("offset", pa.int64()), ("value", pa.string()), ("delivery", pa.string()), ("number", pa.int64()),
     ("received_ns", pa.int64())]
)  # fmt: skip


def _to_json(value: Any) -> str:
    return json.dumps(value, default=repr, sort_keys=True)


# ---- the spool: [first, stop) ranges of offsets as Parquet files ----
class Spool:
    """Received rows on disk, by offset range, until committed."""

    def __init__(self, directory: str) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)

    def ranges(self) -> list[tuple[int, int, Path]]:
        """(first, stop, path) of every spooled file, in offset order."""
        out = []
        for p in self.dir.glob("*.parquet"):
            first, stop = (int(x) for x in p.stem.split("-"))
            out.append((first, stop, p))
        return sorted(out)

    def stop(self, default: int) -> int:
        """One past the highest spooled offset (`default` if nothing is spooled)."""
        ranges = self.ranges()
        return ranges[-1][1] if ranges else default

    def append(self, rows: list[tuple[Any, ...]]) -> None:
        """Spool rows with consecutive offsets (durably, atomically)."""
        if not rows:
            return
        first, stop = rows[0][0], rows[-1][0] + 1
        table = pa.Table.from_pylist([dict(zip(SPOOL_SCHEMA.names, r, strict=True)) for r in rows], SPOOL_SCHEMA)
        final = self.dir / f"{first:015d}-{stop:015d}.parquet"
        tmp = self.dir / f".{final.name}.tmp"
        with open(tmp, "wb") as f:
            pq.write_table(table, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)

    def read(self, start: int, end: int) -> list[tuple[Any, ...]]:
        """Spooled rows with start <= offset < end."""
        rows: list[tuple[Any, ...]] = []
        for first, stop, path in self.ranges():
            if stop <= start or first >= end:
                continue
            for r in pq.read_table(path).to_pylist():
                if start <= r["offset"] < end:
                    rows.append(tuple(r[n] for n in SPOOL_SCHEMA.names))
        return rows

    def commit(self, end: int) -> None:
        """Forget files wholly below `end`."""
        for _first, stop, path in self.ranges():
            if stop <= end:
                path.unlink(missing_ok=True)


# ---- the live subscription (planner process only) ----
@dataclass
class _Options:
    url: str
    topic: str
    ca: str | None
    fingerprint: str | None
    timeout: float

    @classmethod
    def parse(cls, options: dict[str, str]) -> _Options:
        if "url" not in options:
            raise ValueError("the aqueduct data source needs option('url', 'aqueduct://host:port')")
        return cls(options["url"], options.get("topic", ""), options.get("ca"), options.get("fingerprint"),
                   float(options.get("timeout", "30")))  # fmt: skip


class Subscription:
    """A background thread with its own event loop, receiving one topic into a list."""

    def __init__(self, opts: _Options, start: int) -> None:
        self.opts = opts
        self.next_offset = start
        self.pending: list[tuple[Any, ...]] = []
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="aqueduct-subscription", daemon=True)
        self._thread.start()
        if not self._ready.wait(opts.timeout):
            raise TimeoutError(f"no subscription to {opts.url} within {opts.timeout} s")
        if self.error is not None:
            raise self.error

    def take(self) -> list[tuple[Any, ...]]:
        """Rows received since the last call."""
        with self._lock:
            rows, self.pending = self.pending, []
        if not rows and self.error is not None:
            raise RuntimeError(f"subscription to {self.opts.url} failed: {self.error!r}") from self.error
        return rows

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to the planner through take()
            self.error = exc
            self._ready.set()

    async def _main(self) -> None:
        from ..api.endpoints import connect
        from ..api.halves import channel

        async with connect(self.opts.url, ca=self.opts.ca, fingerprint=self.opts.fingerprint) as conn:
            tx, rx = channel()
            request = {"op": "subscribe", "topic": self.opts.topic, "from": self.next_offset, "updates": tx}
            await conn.entrypoint.send(request)
            self._ready.set()
            async for msg in _messages(rx):
                row = (self.next_offset, _to_json(msg.value), msg.delivery.value, msg.number, time.time_ns())
                with self._lock:
                    self.pending.append(row)
                    self.next_offset += 1


async def _messages(rx: Any) -> Any:
    """Messages (with their metadata) of a receiver until it finishes."""
    while True:
        try:
            yield await rx.recv_message()
        except ChannelFinished:
            return


_SUBSCRIPTIONS: dict[tuple[str, str, str], Subscription] = {}
_REGISTRY_LOCK = threading.Lock()


# ---- the data source ----
class AqueductDataSource(DataSource):
    """`format("aqueduct")`: a live Aqueduct channel as a stream source or sink."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "aqueduct"

    def schema(self) -> str:
        """Source rows: offset, value (JSON), delivery, number, received_ns."""
        return SOURCE_SCHEMA

    def simpleStreamReader(self, schema: StructType) -> SimpleDataSourceStreamReader:
        """The subscribing reader."""
        return AqueductStreamReader(dict(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """The publishing writer."""
        return AqueductStreamWriter(dict(self.options))


def _required(options: dict[str, str], name: str, why: str) -> str:
    value = options.get(name)
    if not value:
        raise ValueError(f"the aqueduct data source needs option('{name}', DIR): {why}")
    return value


class AqueductStreamReader(SimpleDataSourceStreamReader):
    """Offsets are message counts; rows are spooled until committed."""

    def __init__(self, options: dict[str, str]) -> None:
        """Cheap: executors build this only to call readBetweenOffsets."""
        self.opts = _Options.parse(options)
        self.spool_dir = _required(
            options, "spool", "received rows wait there until Spark commits them; keep one per query, by its checkpoint"
        )

    def _subscription(self, start: int) -> Subscription:
        key = (self.opts.url, self.opts.topic, self.spool_dir)
        with _REGISTRY_LOCK:
            sub = _SUBSCRIPTIONS.get(key)
            if sub is None or sub.error is not None:
                sub = _SUBSCRIPTIONS[key] = Subscription(self.opts, Spool(self.spool_dir).stop(start))
            return sub

    def initialOffset(self) -> dict[str, int]:
        """A new query starts at offset 0 (or where the spool's committed part ends)."""
        spool = Spool(self.spool_dir)
        ranges = spool.ranges()
        return {"offset": ranges[0][0] if ranges else 0}

    def read(self, start: dict[str, int]) -> tuple[Iterator[tuple[Any, ...]], dict[str, int]]:
        """Spool what arrived, then offer every spooled row from `start` on."""
        spool = Spool(self.spool_dir)
        spool.append(self._subscription(start["offset"]).take())
        end = spool.stop(start["offset"])
        return iter(spool.read(start["offset"], end)), {"offset": end}

    def readBetweenOffsets(self, start: dict[str, int], end: dict[str, int]) -> Iterator[tuple[Any, ...]]:
        """A replayed batch: exactly the spooled rows of the range."""
        rows = Spool(self.spool_dir).read(start["offset"], end["offset"])
        if len(rows) != end["offset"] - start["offset"]:
            raise RuntimeError(f"spool {self.spool_dir} lost rows of [{start['offset']}, {end['offset']})")
        return iter(rows)

    def commit(self, end: dict[str, int]) -> None:
        """Spark has processed everything below `end`."""
        Spool(self.spool_dir).commit(end["offset"])


# ---- the sink ----
@dataclass
class _Rows(WriterCommitMessage):
    rows: list[dict[str, Any]]


class DeliveredBatches:
    """The `ledger` option's file: batch ids already delivered, one per line, appended with fsync."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def delivered(self) -> set[int]:
        """Every batch id noted so far."""
        if not self.path.exists():
            return set()
        return {int(line) for line in self.path.read_text().split() if line.strip()}

    def note(self, batch_id: int) -> None:
        """Remember `batch_id` durably."""
        with open(self.path, "a") as f:
            f.write(f"{batch_id}\n")
            f.flush()
            os.fsync(f.fileno())


class AqueductStreamWriter(DataSourceStreamWriter):
    """Sends each micro-batch's rows once, keyed by batch id."""

    def __init__(self, options: dict[str, str]) -> None:
        """Parse options; no connection until a commit."""
        self.opts = _Options.parse(options)
        self.ledger_path = _required(
            options, "ledger", "the batch ids already delivered; keep one per query, by its checkpoint"
        )
        self.sink_id = options.get("sink") or str(Path(self.ledger_path).resolve())

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        """On an executor: hand the partition's rows to the driver-side commit."""
        return _Rows([row.asDict(recursive=True) for row in iterator])

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """On the driver: send the batch unless its id was delivered before."""
        ledger = DeliveredBatches(self.ledger_path)
        if batchId in ledger.delivered():
            return
        rows = [r for m in messages if isinstance(m, _Rows) for r in m.rows]
        asyncio.run(publish(self.opts, self.sink_id, batchId, rows))
        ledger.note(batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing was sent for an aborted batch."""


async def publish(opts: _Options, sink: str, batch_id: int, rows: list[dict[str, Any]]) -> bool:
    """Send one batch on a fresh channel and wait for the peer's commit; whether it applied it (False: a repeat)."""
    from ..api.endpoints import connect
    from ..api.halves import channel

    async with connect(opts.url, ca=opts.ca, fingerprint=opts.fingerprint) as conn:
        tx, rx = channel()
        done_tx, done_rx = channel()
        await conn.entrypoint.send(
            {"op": "publish", "topic": opts.topic, "sink": sink, "batch_id": batch_id, "rows": rx, "done": done_tx}
        )
        for row in rows:
            await tx.send(row)
        await tx.finish()
        reply = await asyncio.wait_for(done_rx.recv(), opts.timeout)
    if reply.get("batch_id") != batch_id:
        raise RuntimeError(f"the peer committed {reply!r} for batch {batch_id}")
    return bool(reply.get("applied"))


def register(spark: Any) -> None:
    """Make `format("aqueduct")` available in `spark`."""
    spark.dataSource.register(AqueductDataSource)

"""Incremental runs: a partitioned event store that takes in only the segments it has not seen.

`ingest(spark, segments, out)` appends the events of the segments not yet
listed in `out/ingested.json` to `out/events/`, a Parquet dataset
partitioned by `date` (UTC, of `time_ns`) and `connection` (no payloads),
and lists them. An analysis then runs over the store: it sees every event
ingested so far, so its totals are those of a full run over the whole
recording. Segments are identified by file name (names are unique per
recorder and a sealed segment never changes).

Crash safety: a run writes into `events/_staging-<run>/` (Spark and our
readers skip names starting with `_`), then publishes the list of ingested
segments with the run id (temp file + rename), then moves the staged files
into place. A run that finds a staging directory finishes moving it if its
run id was published, else deletes it: a segment is in the store once.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CHECKPOINT = "ingested.json"
STORE = "events"


def _load(out: Path) -> dict[str, list[str]]:
    path = out / CHECKPOINT
    if not path.exists():
        return {"segments": [], "runs": []}
    data: dict[str, list[str]] = json.loads(path.read_text())
    return data


def _publish(out: Path, data: dict[str, list[str]]) -> None:
    tmp = out / f".{CHECKPOINT}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out / CHECKPOINT)


def _move_into_place(staging: Path, store: Path) -> None:
    for src in sorted(p for p in staging.rglob("*.parquet")):
        dst = store / src.relative_to(staging)
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dst)
    shutil.rmtree(staging)


def _recover(out: Path, store: Path) -> None:
    runs = set(_load(out)["runs"])
    for staging in store.glob("_staging-*"):
        if staging.name.removeprefix("_staging-") in runs:
            _move_into_place(staging, store)
        else:
            shutil.rmtree(staging)


def ingest(spark: SparkSession, segments: Sequence[str | Path], out: Path) -> list[Path]:
    """Add the segments not ingested before to the store under `out`; the ones added."""
    from pyspark.sql import functions as F

    from aqueduct.spark.frames import load_events

    store = out / STORE
    store.mkdir(parents=True, exist_ok=True)
    _recover(out, store)
    data = _load(out)
    done = set(data["segments"])
    new = [Path(p) for p in segments if Path(p).name not in done]
    if not new:
        return []
    run = uuid.uuid4().hex
    staging = store / f"_staging-{run}"
    events = load_events(spark, [str(p) for p in new])
    date = F.date_format(F.timestamp_micros(F.floor(F.col("time_ns") / 1000).cast("long")), "yyyy-MM-dd")
    events.withColumn("date", date).write.partitionBy("date", "connection").parquet(str(staging))
    data["segments"] = sorted(done | {p.name for p in new})
    data["runs"] = [*data["runs"], run]
    _publish(out, data)
    _move_into_place(staging, store)
    return new

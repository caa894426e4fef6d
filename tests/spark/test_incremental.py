"""Incremental runs: a grown recording's second run takes in only the new segments, with a full run's totals."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from aqueduct.recording import sealed_segments
from aqueduct.recording.synthetic import SyntheticSpec, generate
from aqueduct.spark.analyze import analyze
from aqueduct.spark.incremental import STORE, ingest


def _totals(tables: dict[str, pa.Table]) -> tuple[object, ...]:
    summary = tables["summary"].to_pylist()[0]
    flows = sorted(
        (r["connection"], r["channel"], r["delivery"], r["direction"], r["messages"], r["bytes"], r["acked"],
         r["nacked"]) for r in tables["flows"].to_pylist()
    )  # fmt: skip
    return summary["events"], summary["messages"], summary["bytes"], summary["connections"], flows


def test_second_run_takes_only_new_segments_and_matches_a_full_run(spark: Any, tmp_path: Path) -> None:
    rec, out = tmp_path / "rec", tmp_path / "out"
    generate(rec, SyntheticSpec(connections=2, channels=3, messages=40, seed=1, rows_per_segment=50))
    first = sealed_segments(rec)
    assert ingest(spark, first, out) == first
    generate(rec, SyntheticSpec(connections=1, channels=3, messages=40, seed=2, rows_per_segment=50))
    grown = sealed_segments(rec)
    added = ingest(spark, grown, out)
    assert sorted(added) == sorted(set(grown) - set(first)) and added
    assert ingest(spark, grown, out) == []  # nothing new: nothing taken in
    incremental = analyze(spark, str(out / STORE))
    assert _totals(incremental) == _totals(analyze(spark, str(rec)))
    dates = {p.name for p in (out / STORE).iterdir() if p.name.startswith("date=")}
    assert dates == {"date=2023-11-14"}  # synthetic recordings start at 1.7e18 ns
    assert {p.name for p in (out / STORE / "date=2023-11-14").iterdir()} == {"connection=conn-0000",
                                                                              "connection=conn-0001"}


def test_an_unpublished_staging_run_is_dropped(spark: Any, tmp_path: Path) -> None:
    rec, out = tmp_path / "rec", tmp_path / "out"
    generate(rec, SyntheticSpec(connections=1, channels=2, messages=10, seed=3))
    ingest(spark, sealed_segments(rec), out)
    store = out / STORE
    crashed = store / "_staging-deadbeef"  # a run that crashed before publishing its checkpoint
    shutil.copytree(store / "date=2023-11-14", crashed / "date=2023-11-14")
    ingest(spark, sealed_segments(rec), out)
    assert not crashed.exists()
    assert _totals(analyze(spark, str(store))) == _totals(analyze(spark, str(rec)))


def test_the_generator_command_writes_about_the_events_asked_for(tmp_path: Path) -> None:
    from aqueduct.recording.reader import check_segments
    from aqueduct.recording.synthetic import main

    assert main([str(tmp_path), "--events", "30000"]) == 0
    good, bad = check_segments(tmp_path)
    assert not bad and 30000 * 0.9 <= sum(pq.ParquetFile(p).metadata.num_rows for p in good) <= 30000 * 1.2

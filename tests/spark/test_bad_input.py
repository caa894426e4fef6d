"""Bad input in a recording directory: one line naming the file and the problem, or skipped and counted."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from aqueduct.cli import main
from aqueduct.recording import Kind, Recorder, RecordingError, make_row, read_events, sealed_segments
from aqueduct.recording.reader import check_segments
from aqueduct.recording.schema import METADATA_KEY, SCHEMA
from aqueduct.spark.analyze import analyze


def _good(path: Path) -> None:
    with Recorder(path) as rec:
        rec.record(make_row(1, Kind.CONNECTION_OPENED, "c", detail="client"))
        for n in range(4):
            rec.record(make_row(2 + n, Kind.MESSAGE_SENT, "c", channel=4, direction="out", delivery="ordered",
                                number=n, length=10))  # fmt: skip


def _corrupt(path: Path) -> Path:
    bad = path / "rec-0-corrupt.parquet"
    bad.write_bytes(b"PAR1" + b"\x00" * 64)
    return bad


def _future(path: Path) -> Path:
    bad = path / "rec-0-future.parquet"
    pq.write_table(SCHEMA.empty_table().replace_schema_metadata({METADATA_KEY: b"99"}), bad)
    return bad


def _stray(path: Path) -> Path:
    bad = path / "zz-other.parquet"
    pq.write_table(pa.table({"time_ns": [1], "colour": ["red"]}), bad)
    return bad


CASES = [
    (_corrupt, "not a readable Parquet file"),
    (_future, "recording format '99', this aqueduct reads 1, 2"),
    (_stray, "not an aqueduct recording segment"),
]


@pytest.mark.parametrize(("make", "problem"), CASES)
def test_analyze_stops_with_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, problem: str
) -> None:
    _good(tmp_path)
    bad = make(tmp_path)
    assert main(["analyze", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"aqueduct analyze: {bad}: {problem}"), err
    assert "--skip-bad" in err


@pytest.mark.parametrize(("make", "problem"), CASES)
def test_readers_name_the_file_too(tmp_path: Path, make: Any, problem: str) -> None:
    _good(tmp_path)
    bad = make(tmp_path)
    with pytest.raises(RecordingError, match=re.escape(f"{bad}: {problem}")):
        read_events(tmp_path)


def test_skip_bad_goes_on_and_counts(spark: Any, tmp_path: Path) -> None:
    _good(tmp_path)
    bads = [make(tmp_path) for make, _ in CASES]
    good, skipped = check_segments(tmp_path, skip_bad=True)
    assert sorted(b.path for b in skipped) == sorted(bads)
    assert good == [p for p in sealed_segments(tmp_path) if p not in bads]
    tables = analyze(spark, [str(p) for p in good])
    assert tables["summary"]["messages"][0].as_py() == 4
    assert len(read_events(tmp_path, skip_bad=True)) == 5

"""`analyze --sql`: the documented views, queried with Spark SQL, agree with plain Python."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from aqueduct.recording import read_events
from aqueduct.recording.synthetic import SyntheticSpec, generate
from aqueduct.spark.analyze import run_sql
from aqueduct.spark.frames import load_events, views

pytestmark = pytest.mark.requires_system("java")

_DOC = Path(__file__).parents[2] / "specs" / "RECORDING.md"


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlrec")
    generate(path, SyntheticSpec(connections=2, channels=4, messages=50, seed=5))
    return path


def test_views_have_the_documented_columns(spark: Any, recording: Path) -> None:
    documented = dict(re.findall(r"^\| `(\w+)` \| ([a-z_, 0-9]+) \|$", _DOC.read_text(), re.M))
    got = {name: ", ".join(frame.columns) for name, frame in views(load_events(spark, str(recording))).items()}
    assert got == {name: documented.get(name) for name in got}


def test_a_query_over_events_counts_what_python_counts(spark: Any, recording: Path) -> None:
    result = run_sql(
        spark, str(recording),
        "SELECT delivery, count(*) AS n FROM events WHERE kind = 'message_sent' GROUP BY delivery ORDER BY delivery",
    )  # fmt: skip
    want = Counter(e["delivery"] for e in read_events(recording) if e["kind"] == "message_sent")
    assert dict(zip(result["delivery"].to_pylist(), result["n"].to_pylist(), strict=True)) == dict(want)
    joined = run_sql(spark, str(recording), "SELECT count(*) AS n FROM flows JOIN channels USING (connection, channel)")
    assert joined["n"][0].as_py() > 0


def test_cli_sql_with_skip_bad(recording: Path, tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    rec.mkdir()
    for p in recording.iterdir():
        (rec / p.name).write_bytes(p.read_bytes())
    (rec / "stray.parquet").write_bytes(b"not parquet")
    out = tmp_path / "out"
    command = Path(sys.executable).with_name("aqueduct")
    result = subprocess.run(
        [str(command), "analyze", str(rec), "--out", str(out), "--skip-bad", "--master", "local[1]",
         "--sql", "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind"],
        capture_output=True, text=True, timeout=240, env=dict(os.environ),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "skipped 1 bad file(s)" in result.stderr and "stray.parquet" in result.stderr
    got = pq.read_table(out / "sql.parquet").to_pylist()
    want = Counter(e["kind"] for e in read_events(recording))
    assert {r["kind"]: r["n"] for r in got} == dict(want)
    assert "message_sent" in result.stdout

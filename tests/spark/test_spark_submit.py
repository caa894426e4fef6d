"""The pipeline from the command line: `spark-submit aqueduct/spark/analyze.py` and `aqueduct analyze`.

Three runs share one output directory, as a user's would (docs/recording-spark.md, "Recording
and Spark"): spark-submit takes a recording into the incremental store and
writes the HTML report; the recording grows; `aqueduct analyze --incremental
--html` takes in only the new segments; spark-submit runs a `--sql` query
over the store. Each run's answers are checked against the Python API on a
copy of the same recording, or against plain Python. The `aqueduct` run goes
through the CLI's entry point in this process, on the tests' shared Spark
session (a JVM start less); the `aqueduct` executable itself runs in
test_sql.py, test_cluster.py and test_html_report.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from aqueduct.cli import main
from aqueduct.recording import read_events, sealed_segments
from aqueduct.recording.synthetic import SyntheticSpec, generate
from aqueduct.spark.analyze import RESULT_ORDER, analyze
from aqueduct.spark.incremental import CHECKPOINT, STORE
from aqueduct.spark.report import table_text

from . import expected

pytestmark = pytest.mark.requires_system("java")

ROOT = Path(__file__).parents[2]
BIN = Path(sys.executable).parent
SQL = (
    "SELECT connection, count(*) AS events, sum(length) AS bytes, count_if(kind = 'nacked') AS nacked "
    "FROM events GROUP BY connection ORDER BY connection"
)
TIMEOUT = 300


@dataclass
class Run:
    """One command's exit status, output, and the result tables it left in the output directory."""

    result: subprocess.CompletedProcess[str]
    tables: dict[str, pa.Table]

    @property
    def said(self) -> str:
        """What the job said: spark-submit's Python runner merges the Python process's stderr into its stdout."""
        return self.result.stdout + self.result.stderr

    def check(self) -> None:
        assert self.result.returncode == 0, self.result.stdout[-2000:] + self.result.stderr[-4000:]


@dataclass
class Runs:
    first: Path
    """A copy of the recording as spark-submit's first run saw it."""
    grown: Path
    """The recording after it grew (what the CLI run and the SQL run saw)."""
    out: Path
    submit: Run
    cli: Run
    sql: Run


def _env() -> dict[str, str]:
    # C1-only JIT, as the shared test session uses (a short-lived JVM starts faster); few shuffle partitions
    return dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1", AQUEDUCT_SPARK_PARTITIONS="2",
                JAVA_TOOL_OPTIONS="-XX:TieredStopAtLevel=1")  # fmt: skip


def _run(argv: list[str], cwd: Path, out: Path, tables: list[str]) -> Run:
    result = subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
    return Run(result, {name: pq.read_table(out / f"{name}.parquet") for name in tables if result.returncode == 0})


def _submit(*args: str, cwd: Path, out: Path, tables: list[str]) -> Run:
    argv = [str(BIN / "spark-submit"), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
            str(ROOT / "aqueduct" / "spark" / "analyze.py"), *args]  # fmt: skip
    return _run(argv, cwd, out, tables)


def _in_process(argv: list[str], out: Path, tables: list[str]) -> Run:
    """`aqueduct ARGV` through the CLI's entry point in this process: it runs on the tests' Spark session."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(argv)
    result = subprocess.CompletedProcess(["aqueduct", *argv], code, stdout.getvalue(), stderr.getvalue())
    return Run(result, {name: pq.read_table(out / f"{name}.parquet") for name in tables if code == 0})


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> Runs:
    base = tmp_path_factory.mktemp("submit")
    rec, out = base / "rec", base / "rec.analysis"
    generate(rec, SyntheticSpec(connections=2, channels=3, messages=40, loss=0.1, seed=1, rows_per_segment=60))
    first = base / "first"
    shutil.copytree(rec, first)
    # relative paths, as in the README; the output directory defaults to rec.analysis
    submit = _submit("rec", "--incremental", "--html", "report.html", "--no-charts", cwd=base, out=out,
                     tables=RESULT_ORDER)  # fmt: skip
    generate(rec, SyntheticSpec(connections=1, channels=2, messages=30, loss=0.1, seed=2, rows_per_segment=60))
    cli = _in_process(["analyze", str(rec), "--incremental", "--html", str(base / "grown.html"), "--out", str(out)],
                      out, ["summary", "flows"])  # fmt: skip
    sql = _submit("rec", "--incremental", "--sql", SQL, cwd=base, out=out, tables=["sql"])
    return Runs(first, rec, out, submit, cli, sql)


def _close(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _sort_key(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(f"{v:.6g}" if isinstance(v, float) else repr(v) for v in row.values())


def _same_table(got: pa.Table, want: pa.Table, name: str) -> None:
    assert got.schema.names == want.schema.names, name
    g, w = sorted(got.to_pylist(), key=_sort_key), sorted(want.to_pylist(), key=_sort_key)
    assert len(g) == len(w), name
    for gr, wr in zip(g, w, strict=True):
        assert all(_close(gr[k], wr[k]) for k in wr), (name, gr, wr)


def _section(html: str, name: str) -> str:
    match = re.search(rf"<section id='section-{name}'>.*?</section>", html, re.S)
    assert match is not None, name
    return match.group(0)


def _rows(section: str) -> list[dict[str, str]]:
    head = re.findall(r"<th>(.*?)</th>", section)
    return [dict(zip(head, re.findall(r"<td>(.*?)</td>", row), strict=True))
            for row in re.findall(r"<tr>(<td>.*?)</tr>", section)]  # fmt: skip


def test_spark_submit_analyzes_incrementally_like_the_python_api(runs: Runs, spark: Any) -> None:
    runs.submit.check()
    err = runs.submit.said
    segments = sealed_segments(runs.first)
    assert "using spark-submit's Spark session" in err and "(master local[2])" in err
    assert f"{len(segments)} new segment(s) of {len(segments)} taken into" in err
    # a successful run is quiet: no JVM errors (e.g. from stopping Spark under a stage still running)
    assert not [line for line in err.splitlines() if " ERROR " in line or "Exception" in line]
    want = analyze(spark, str(runs.first))
    for name in RESULT_ORDER:  # every table, over the incremental store, as a full run over the recording has it
        _same_table(runs.submit.tables[name], want[name], name)
    assert "== Per delivery mode ==" in runs.submit.result.stdout


def test_spark_submit_writes_the_html_report(runs: Runs) -> None:
    runs.submit.check()
    page = runs.out.parent / "report.html"
    assert f"report: {page.name}" in runs.submit.result.stdout
    html = page.read_text()
    assert html.count("data:image/png;base64,") == 2  # the charts are in the page even with --no-charts
    events = read_events(runs.first)
    assert f"<td>{len(events):,}</td>" in _section(html, "summary")
    rows = _rows(_section(html, "by_delivery"))
    nacked = {r["delivery"]: int(r["nacked"]) for r in rows if r["direction"] == "out"}
    want = {d: sum(e["kind"] == "nacked" and e["delivery"] == d for e in events) for d in nacked}
    assert nacked == want and sum(want.values())
    for name in ("flows", "by_connection", "top_channels", "trees", "connection_stats"):
        _section(html, name)


def test_the_cli_takes_in_only_the_new_segments_with_a_full_runs_totals(runs: Runs, spark: Any) -> None:
    runs.cli.check()
    out, err = runs.cli.result.stdout, runs.cli.result.stderr
    assert "using this process's running Spark session" in err
    assert spark.sparkContext._jsc is not None and spark.range(3).count() == 3  # it left the session running
    segments, before = sealed_segments(runs.grown), sealed_segments(runs.first)
    assert len(segments) > len(before)
    assert f"{len(segments) - len(before)} new segment(s) of {len(segments)} taken into" in err
    ingested = json.loads((runs.out / CHECKPOINT).read_text())["segments"]
    assert sorted(ingested) == sorted(p.name for p in segments)
    # progress: numbered steps, the first one the conversion into the store
    assert "[1/9] taking in new segments ..." in err and "[9/9] both sides paired per channel:" in err
    events = read_events(runs.grown)
    summary = runs.cli.tables["summary"].to_pylist()[0]
    assert (summary["events"], summary["messages"]) == (len(events), sum(e["kind"] in expected.MESSAGE for e in events))
    want = expected.flows(events)
    got = {
        (r["connection"], r["channel"], r["delivery"], r["direction"]): r for r in runs.cli.tables["flows"].to_pylist()
    }
    assert {k: (r["messages"], r["bytes"], r["acked"], r["nacked"]) for k, r in got.items()} == {
        k: (w["messages"], w["bytes"], w["acked"], w["nacked"]) for k, w in want.items()
    }
    assert f"{len(events):,}" in out.split("== Recording ==")[1].split("==")[0]
    html = (runs.out.parent / "grown.html").read_text()
    assert f"<td>{len(events):,}</td>" in _section(html, "summary")
    assert f"report: {runs.out.parent / 'grown.html'}" in out
    assert (runs.out / "throughput.png").exists() and (runs.out / "latency.png").exists()
    dates = [p for p in (runs.out / STORE).iterdir() if p.name.startswith("date=")]
    assert {p.name for d in dates for p in d.iterdir()} == {"connection=conn-0000", "connection=conn-0001"}


def test_spark_submit_sql_prints_what_python_counts(runs: Runs) -> None:
    runs.sql.check()
    assert f"0 new segment(s) of {len(sealed_segments(runs.grown))}" in runs.sql.said
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for e in read_events(runs.grown):
        row = per[e["connection"]]
        row[0] += 1
        row[1] += e["length"] or 0
        row[2] += e["kind"] == "nacked"
    want = pa.table(
        {"connection": sorted(per), **{c: [per[k][i] for k in sorted(per)]
                                       for i, c in enumerate(("events", "bytes", "nacked"))}}
    )  # fmt: skip
    assert runs.sql.tables["sql"].to_pylist() == want.to_pylist()
    assert all(n for n in want["nacked"].to_pylist())
    assert table_text(want, want.column_names, 50) in runs.sql.result.stdout  # the printed numbers
    assert f"result: rec.analysis/sql.parquet ({want.num_rows} rows)" in runs.sql.result.stdout

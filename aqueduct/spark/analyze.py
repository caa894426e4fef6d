"""`aqueduct analyze`: a PySpark job over a recording directory.

Spark does the heavy part: it scans the segments' needed columns and
aggregates them (flows per connection, channel,
delivery mode and direction, with approximate ack-latency percentiles;
rollups per connection and per delivery mode; channel lifetimes and end
states; a throughput timeline; a latency histogram; connection stats). The
results are small and come back to the driver as Arrow tables (no Python
workers are needed on executors, so any cluster runs it unchanged); the
driver adds tree depth and fan-out, writes each table as Parquet, prints a
report and draws the charts. Runs as `aqueduct analyze`, `python -m
aqueduct.spark.analyze` or `spark-submit .../aqueduct/spark/analyze.py`.
The aggregations themselves are frames.py's; this module runs them in
order, adds the trees, and is the command line.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from aqueduct.spark.frames import (
    CORE_COLUMNS,
    MESSAGE_KINDS,
    attachment_edges,
    channel_lifetimes,
    connection_stats,
    flow_metrics,
    latency_histogram,
    load_events,
    paired_channels,
    split_flows,
    timeline,
    views,
)
from aqueduct.spark.options import add_analyze_arguments
from aqueduct.spark.progress import Progress
from aqueduct.spark.trees import tree_nodes

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TOP_CHANNELS = 10
TIMELINE_BUCKETS = 100
QUICK_JIT = "-XX:TieredStopAtLevel=1"
"""C1-only JIT: a JVM that starts and warms up fast; C2's peak speed only pays off on large inputs."""
QUICK_JIT_EVENTS = 5_000_000
"""`--jit auto` uses QUICK_JIT below this many events (see benchmarks/spark_bench.py)."""
STEPS = 8
"""Progress steps of `analyze`."""
RESULT_ORDER = [
    "summary", "flows", "by_connection", "by_delivery", "channels", "trees", "top_channels", "timeline",
    "latency_histogram", "connection_stats", "paired_channels",
]  # fmt: skip


def _trees(channels: pa.Table, edges: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Add parent/depth/fanout to the channel table; per-connection tree summary."""
    per_conn_channels: dict[str, list[int]] = defaultdict(list)
    for conn, ch in zip(channels["connection"].to_pylist(), channels["channel"].to_pylist(), strict=True):
        per_conn_channels[conn].append(ch)
    per_conn_edges: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for conn, p, c in zip(*(edges[n].to_pylist() for n in ("connection", "parent", "child")), strict=True):
        per_conn_edges[conn].append((p, c))
    info = {conn: tree_nodes(chs, per_conn_edges.get(conn, ())) for conn, chs in per_conn_channels.items()}
    keys = zip(channels["connection"].to_pylist(), channels["channel"].to_pylist(), strict=True)
    nodes = [info[conn][ch] for conn, ch in keys]
    channels = (
        channels.append_column("parent", pa.array([n.parent for n in nodes], pa.int64()))
        .append_column("depth", pa.array([n.depth for n in nodes], pa.int64()))
        .append_column("fanout", pa.array([n.fanout for n in nodes], pa.int64()))
    )
    rows = []
    for conn in sorted(info):
        ns = list(info[conn].values())
        parents = [n.fanout for n in ns if n.fanout]
        depths = [n.depth for n in ns if n.depth is not None]
        rows.append(
            {
                "connection": conn,
                "channels": len(ns),
                "roots": sum(1 for n in ns if n.parent is None),
                "max_depth": max(depths, default=0),
                "max_fanout": max(parents, default=0),
                "mean_fanout": sum(parents) / len(parents) if parents else 0.0,
            }
        )
    schema = pa.schema(
        [("connection", pa.string()), ("channels", pa.int64()), ("roots", pa.int64()), ("max_depth", pa.int64()),
         ("max_fanout", pa.int64()), ("mean_fanout", pa.float64())]
    )  # fmt: skip
    return channels, pa.Table.from_pylist(rows, schema=schema)


def analyze(spark: SparkSession, path: str | list[str], progress: Progress | None = None) -> dict[str, pa.Table]:
    """Run every aggregation over the recording at `path` (a directory, or a list of segment files); the result
    tables, by name."""
    from pyspark.sql import functions as F

    progress = progress or Progress(STEPS, out=io.StringIO())
    out: dict[str, pa.Table] = {}
    events = load_events(spark, path)
    core = events.select(*CORE_COLUMNS)
    with progress.step("reading the recording"):
        is_msg = F.col("kind").isin(*MESSAGE_KINDS)
        summary = core.agg(
            F.count(F.lit(1)).alias("events"),
            F.count(F.when(is_msg, 1)).alias("messages"),
            F.coalesce(F.sum(F.when(is_msg, F.col("length"))), F.lit(0)).alias("bytes"),
            F.min("time_ns").alias("first_ns"),
            F.max("time_ns").alias("last_ns"),
        ).toArrow()
    with progress.step("flows per connection, channel and delivery mode, with rollups"):
        counts, latencies = flow_metrics(core)
        out.update(split_flows(counts.toArrow(), latencies.toArrow()))
    with progress.step("channel lifetimes and end states"):
        channels = channel_lifetimes(core).toArrow()
    with progress.step("attachment trees"):
        out["channels"], out["trees"] = _trees(channels, attachment_edges(events).toArrow())
        order = pc.sort_indices(
            out["channels"], [("bytes", "descending"), ("connection", "ascending"), ("channel", "ascending")]
        )
        out["top_channels"] = out["channels"].take(order[:TOP_CHANNELS])
    with progress.step("throughput timeline"):
        first, last = summary["first_ns"][0].as_py(), summary["last_ns"][0].as_py()
        span = (last - first) if first is not None else 0
        width = max(10, math.ceil(span / TIMELINE_BUCKETS / 1e6)) * 1_000_000  # whole ms, at least 10
        out["timeline"] = timeline(core, first or 0, width).toArrow()
    with progress.step("ack latency histogram"):
        out["latency_histogram"] = latency_histogram(core).toArrow()
    with progress.step("connection stats"):
        out["connection_stats"] = connection_stats(events).toArrow()
    with progress.step("both sides paired per channel"):
        out["paired_channels"] = paired_channels(events).toArrow()
    connections = len(
        {*out["by_connection"]["connection"].to_pylist(), *out["trees"]["connection"].to_pylist(),
         *out["connection_stats"]["connection"].to_pylist()}
    )  # fmt: skip
    out["summary"] = (
        summary.append_column("connections", pa.array([connections], pa.int64()))
        .append_column("channels", pa.array([out["channels"].num_rows], pa.int64()))
        .append_column("span_s", pa.array([span / 1e9], pa.float64()))
    )
    return {name: out[name] for name in RESULT_ORDER}


def run_sql(spark: SparkSession, path: str | list[str], query: str) -> pa.Table:
    """Register the views over the recording at `path` as temporary views and run `query` (Spark SQL)."""
    for name, frame in views(load_events(spark, path)).items():
        frame.createOrReplaceTempView(name)
    return spark.sql(query).toArrow()


def recorded_events(paths: Sequence[str | Path]) -> int:
    """Rows in local segments, from their Parquet footers (no data read)."""
    return sum(pq.ParquetFile(p).metadata.num_rows for p in paths)


def write_tables(tables: dict[str, pa.Table], out_dir: Path) -> list[Path]:
    """Each table as `out_dir/NAME.parquet` (temp file and rename, like the recorder)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, table in tables.items():
        final = out_dir / f"{name}.parquet"
        tmp = out_dir / f".{name}.parquet.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, final)
        paths.append(final)
    return paths


def build_parser() -> argparse.ArgumentParser:
    """The command line when run as a module or by spark-submit (same options as `aqueduct analyze`)."""
    parser = argparse.ArgumentParser(prog="aqueduct analyze", description="Analyze an Aqueduct recording with Spark.")
    return add_analyze_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Analyze, write, print and draw; the exit status."""
    from aqueduct.recording.reader import BadSegment, RecordingError, check_segments
    from aqueduct.recording.segments import sealed_segments
    from aqueduct.spark.report import render
    from aqueduct.spark.session import JavaMissing, session_running, spark_session, stop_session, under_spark_submit

    recording = str(args.recording)
    is_local = "://" not in recording or recording.startswith("file://")
    local_path = Path(recording.removeprefix("file://"))
    if is_local and (not local_path.is_dir() or not sealed_segments(local_path)):
        print(f"aqueduct analyze: no sealed recording segments in {recording}", file=sys.stderr)
        return 2
    source: str | list[str] = recording
    skipped: list[BadSegment] = []
    if is_local:
        try:
            good, skipped = check_segments(local_path, skip_bad=args.skip_bad)
        except RecordingError as exc:
            print(f"aqueduct analyze: {exc} (--skip-bad leaves such files out)", file=sys.stderr)
            return 2
        if not good:
            print(f"aqueduct analyze: no good segments in {recording} ({len(skipped)} bad)", file=sys.stderr)
            return 2
        source = [str(p.resolve()) for p in good]
    out_dir = Path(args.out or f"{recording.rstrip('/')}.analysis")
    out_dir.mkdir(parents=True, exist_ok=True)
    jit = args.jit
    if jit == "auto":
        jit = "quick" if is_local and recorded_events(source) < QUICK_JIT_EVENTS else "full"
    config = {f"spark.{role}.extraJavaOptions": QUICK_JIT for role in ("driver", "executor")} if jit == "quick" else {}
    progress = Progress((1 if args.sql else STEPS) + (1 if args.incremental else 0))
    started = time.monotonic()
    borrowed = session_running()  # called from code that has a session (a notebook): use it, leave it running
    if borrowed:
        config = {}
    progress.note(
        "aqueduct analyze: using spark-submit's Spark session"
        if under_spark_submit()
        else "aqueduct analyze: using this process's running Spark session"
        if borrowed
        else f"aqueduct analyze: starting Spark ({args.master or 'local[*]'}, {jit} JIT); log in {out_dir}/spark.log"
    )
    try:
        spark = spark_session(
            args.master, app_name="aqueduct-analyze", config=config, jvm_log=str(out_dir / "spark.log")
        )
    except JavaMissing as exc:
        print(f"aqueduct analyze: {exc}", file=sys.stderr)
        return 3
    progress.note(
        f"Spark {spark.version} up in {time.monotonic() - started:.1f} s (master {spark.sparkContext.master})"
    )
    for bad in skipped:
        progress.note(f"aqueduct analyze: skipped {bad}")
    if skipped:
        progress.note(f"aqueduct analyze: skipped {len(skipped)} bad file(s) of {len(skipped) + len(source)}")
    progress.watch(spark.sparkContext)
    if args.incremental and is_local:
        from aqueduct.spark.incremental import STORE, ingest

        with progress.step("taking in new segments"):
            added = ingest(spark, source, out_dir)
        progress.note(f"aqueduct analyze: {len(added)} new segment(s) of {len(source)} taken into {out_dir / STORE}")
        source = str((out_dir / STORE).resolve())
    try:
        if args.sql:
            with progress.step("the SQL query"):
                result = run_sql(spark, source, args.sql)
            tables = {"sql": result}
        else:
            tables = analyze(spark, source, progress)
    except Exception as exc:  # a Spark failure (e.g. damage inside a data page): one line, not a JVM trace
        first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        print(f"aqueduct analyze: Spark failed: {first[:500]}", file=sys.stderr)
        return 1
    finally:
        progress.close()
        if not borrowed:
            stop_session(spark)
    write_tables(tables, out_dir)
    if args.sql:
        from aqueduct.spark.report import table_text

        print(table_text(tables["sql"], tables["sql"].column_names, args.rows))
        print(f"result: {out_dir}/sql.parquet ({tables['sql'].num_rows} rows)")
        return 0
    print(render(tables))
    html_path = getattr(args, "html", None)
    if html_path:
        from aqueduct.spark.html_report import write_html

        print(f"report: {write_html(tables, Path(html_path), f'Aqueduct recording {recording}')}")
    if not args.no_charts:
        from aqueduct.spark.charts import draw

        for png in draw(tables, out_dir):
            print(f"chart: {png}")
    print(f"tables: {out_dir}/*.parquet; analyzed in {time.monotonic() - started:.1f} s")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `python -m aqueduct.spark.analyze` and spark-submit."""
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

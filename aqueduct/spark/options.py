"""Command-line options of `aqueduct analyze`, kept free of heavy imports so `aqueduct --help` stays fast."""

from __future__ import annotations

import argparse


def add_analyze_arguments(parser: argparse.ArgumentParser, html: bool = True) -> argparse.ArgumentParser:
    """Add the recording argument and the analyze options to `parser` (`html=False`: without `--html FILE`, for
    `aqueduct report`, whose one output is its `-o FILE`)."""
    parser.add_argument("recording", help="recording directory (local path, or any URL Spark can read)")
    parser.add_argument(
        "--master", default=None, help="Spark master URL (default local[*]; ignored under spark-submit)"
    )
    parser.add_argument("--out", default=None, help="where result tables and charts go (default: RECORDING.analysis)")
    parser.add_argument("--no-charts", action="store_true", help="skip the PNG charts")
    parser.add_argument(
        "--sql",
        metavar="QUERY",
        help="run one Spark SQL query instead of the report, over temporary views events, flows, channels, "
        "connection_stats, paired_channels (columns: specs/RECORDING.md); prints the result, writes OUT/sql.parquet",
    )
    parser.add_argument(
        "--incremental",
        action="store_true",
        help="keep OUT/events, the events partitioned by date and connection, take in only segments not seen "
        "before (listed in OUT/ingested.json), and analyze the store: same totals as a full run",
    )
    if html:
        parser.add_argument("--html", metavar="FILE", help="also write the report as one self-contained HTML file")
    parser.add_argument("--rows", type=int, default=50, metavar="N",
                        help="rows of a --sql result to print (default 50)")
    parser.add_argument(
        "--skip-bad",
        action="store_true",
        help="leave out files that are not readable segments of a known format (default: stop at the first, "
        "naming it); says how many were skipped",
    )
    parser.add_argument(
        "--jit",
        choices=["auto", "quick", "full"],
        default="auto",
        help="JVM compiler, when analyze starts the JVM itself (not under spark-submit: give it "
        "--driver-java-options there): quick (C1 only: fast start, best for small recordings), full (C2), "
        "auto: quick below 5M events (default)",
    )
    return parser

"""`aqueduct analyze DIR [--master URL] [--out DIR]`: the Spark job of aqueduct/spark/analyze.py."""

from __future__ import annotations

import argparse

from ..spark.options import add_analyze_arguments


def _run(args: argparse.Namespace) -> int:
    from ..spark.analyze import run

    return run(args)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `aqueduct analyze`."""
    parser = sub.add_parser("analyze", help="analyze a recording with Spark: tables, Parquet results, PNG charts")
    add_analyze_arguments(parser)
    parser.set_defaults(func=_run)

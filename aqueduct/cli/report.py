"""`aqueduct report DIR -o report.html`: the analysis as one self-contained HTML file (spark/html_report.py)."""

from __future__ import annotations

import argparse

from ..spark.options import add_analyze_arguments


def _run(args: argparse.Namespace) -> int:
    from ..spark.analyze import run

    return run(args)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `aqueduct report`."""
    parser = sub.add_parser("report", help="analyze a recording with Spark into one HTML file with embedded charts")
    add_analyze_arguments(parser, html=False)
    parser.add_argument("-o", "--output", dest="html", required=True, metavar="FILE",
                        help="the HTML file to write")  # fmt: skip
    parser.set_defaults(func=_run)

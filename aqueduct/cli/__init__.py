"""The `aqueduct` command: one subcommand module per area, each with `register(subparsers)`.

Subcommand modules live beside this file; `_COMMANDS` lists them in the
order `--help` shows them. A module must define `register(sub)` that adds
its parser and sets `func` (taking the parsed args, returning an exit code).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

_COMMANDS = ["wire", "cert", "serve", "demo", "analyze", "report", "replay", "bench"]


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    parser = argparse.ArgumentParser(prog="aqueduct", description="Aqueduct: typed message channels over QUIC")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in _COMMANDS:
        importlib.import_module(f"aqueduct.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

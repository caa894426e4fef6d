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

_COMMANDS = ["wire", "cert", "serve", "demo", "analyze", "report", "replay", "bench", "schema"]

# Modules that only an extra installs: a command that needs one says how to get it.
_EXTRAS = {"pyarrow": "spark", "pyspark": "spark", "matplotlib": "spark", "pandas": "spark", "opentelemetry": "otel"}


class _Version(argparse.Action):
    """`--version`: the release and which wire and engine run (aqueduct/native.py), on one unwrapped line."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        from .. import __version__
        from ..native import compiled

        print(f"{parser.prog} {__version__}, {compiled()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    parser = argparse.ArgumentParser(prog="aqueduct", description="Aqueduct: typed message channels over QUIC")
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version, and whether the wire and "
                        "engine run compiled or pure (and why), then exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in _COMMANDS:
        importlib.import_module(f"aqueduct.cli.{name}").register(sub)
    return parser


def _check_files(args: argparse.Namespace) -> None:
    """Every command's `--ca`, `--client-ca`, `--cert` and `--key` files are checked before it starts (ConfigError)."""
    from ..quic.credentials import check_ca_file, check_cert_and_key

    for ca in (getattr(args, "ca", None), getattr(args, "client_ca", None)):
        if ca is not None:
            check_ca_file(ca)
    if getattr(args, "cert", None) is not None and getattr(args, "key", None) is not None:
        check_cert_and_key(args.cert, args.key)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    from ..errors import ConfigError, ConnectError

    args = build_parser().parse_args(argv)
    try:
        _check_files(args)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (ConfigError, ConnectError) as exc:
        print(f"aqueduct {args.command}: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        extra = _EXTRAS.get(missing)
        if extra is None:
            raise
        print(f"aqueduct {args.command}: needs {missing}, which the {extra} extra installs: "
              f"pip install 'aqueduct-quic[{extra}]'", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

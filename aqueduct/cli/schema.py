"""`aqueduct schema module:Type`: print a message type's JSON Schema and the fingerprint peers compare."""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from ..api.schema import canonical, describe, fingerprint


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the `schema` subcommand."""
    p = sub.add_parser("schema", help="print a message type's JSON Schema and its fingerprint (module:Type)")
    p.add_argument("type", metavar="module:Type", help="the entrypoint or message type, e.g. myapp.messages:Order")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Import the type, print its schema (indented) and the fingerprint announced at connect."""
    module_name, _, attr = args.type.partition(":")
    if not module_name or not attr:
        print(f"aqueduct schema: expected module:Type, got {args.type!r}", file=sys.stderr)
        return 2
    try:
        tp = importlib.import_module(module_name)
        for part in attr.split("."):
            tp = getattr(tp, part)
        schema = describe(tp)
    except (ImportError, AttributeError) as exc:
        print(f"aqueduct schema: cannot load {args.type}: {exc}", file=sys.stderr)
        return 2
    except (TypeError, ValueError) as exc:
        print(f"aqueduct schema: {args.type} is not a message type: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(schema, indent=2, sort_keys=True))
    print(f"fingerprint: {fingerprint(canonical(tp))}")
    return 0

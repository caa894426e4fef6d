"""`aqueduct schema module:Type`: print a message type's (or a service interface's) JSON Schema and the
fingerprint peers compare.

The module is imported as `python -c "import module"` would from the current directory (the current
directory first on the path), so a type defined next to the caller's code is found without PYTHONPATH.
A service interface (an `aqueduct.Service` subclass) prints the schema of its channel: the union of its
methods' call messages, each with its arguments and its reply (the result, or an error). The printed
document names its dialect, JSON Schema 2020-12.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any

from ..api.schema import canonical, describe, fingerprint
from ..services.interface import Service, interface_of

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the `schema` subcommand."""
    p = sub.add_parser("schema", help="print a message type's or service's JSON Schema and its fingerprint")
    p.add_argument("type", metavar="module:Type",
                   help="the entrypoint or message type, or a service interface, e.g. myapp.messages:Order")
    p.set_defaults(func=run)


def message_type(obj: Any) -> Any:
    """What travels for `obj`: a service interface's call messages, or `obj` itself (a message type)."""
    if isinstance(obj, type) and issubclass(obj, Service):
        return interface_of(obj).call_type
    return obj


def run(args: argparse.Namespace) -> int:
    """Import the type, print its schema (indented) and the fingerprint announced at connect."""
    module_name, _, attr = args.type.partition(":")
    if not module_name or not attr:
        print(f"aqueduct schema: expected module:Type, got {args.type!r}", file=sys.stderr)
        return 2
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
    try:
        tp = importlib.import_module(module_name)
        for part in attr.split("."):
            tp = getattr(tp, part)
        tp = message_type(tp)
        schema = describe(tp)
    except (ImportError, AttributeError) as exc:
        print(f"aqueduct schema: cannot load {args.type}: {exc}", file=sys.stderr)
        return 2
    except (TypeError, ValueError) as exc:
        print(f"aqueduct schema: {args.type} is not a message type: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"$schema": DIALECT, **schema}, indent=2, sort_keys=True))
    print(f"fingerprint: {fingerprint(canonical(tp))}")
    return 0

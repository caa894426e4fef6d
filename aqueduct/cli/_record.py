"""The recording options every recording command shares: `--record DIR`, `--record-payloads`, `--payload-limit`.

`recorder(args)` opens the Recorder those options ask for (None without
`--record`); the command closes it when its connections are over, which
seals the last segment.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..recording import Recorder

DEFAULT_PAYLOAD_LIMIT = 64 << 10
"""Kept equal to aqueduct.recording.recorder.DEFAULT_PAYLOAD_LIMIT (a test checks) without importing pyarrow."""


def add_record_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """Add the recording options; `what` says whose traffic is recorded."""
    parser.add_argument("--record", metavar="DIR", help=f"record {what} (Parquet) into DIR")
    parser.add_argument("--record-payloads", action="store_true",
                        help="with --record: keep each message's payload bytes too (so `aqueduct replay` resends "
                             "the real bytes), up to --payload-limit per message")  # fmt: skip
    parser.add_argument("--payload-limit", type=int, default=DEFAULT_PAYLOAD_LIMIT, metavar="BYTES",
                        help="largest payload kept per message with --record-payloads (default: %(default)s; "
                             "a longer one keeps only its length)")  # fmt: skip


def recorder(args: argparse.Namespace) -> Recorder | None:
    """The Recorder the options ask for, or None."""
    if not args.record:
        return None
    from ..recording import Recorder

    return Recorder(args.record, payloads=args.record_payloads, payload_limit=args.payload_limit)

"""`aqueduct wire`: a dissector for Aqueduct bytes.

`decode HEX` prints what the bytes hold as JSON in the vector schema of
specs/vectors/aqueduct-wire.json (`{"frames": [...]}` by default, or a
var len int / channel ID with `--kind`). `encode JSON` takes
`{"frames": [...]}` or a list of frames and prints their bytes as hex. An
argument of `-` is read from stdin. Bad input of any kind gives one line on
stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..wire import DEFAULT_MAX_FRAME_SIZE, ProtocolError, encode_frames
from ..wire.vectors import VECTOR_KINDS, decode_kind, frames_from_json

EXIT_BAD_INPUT = 2


def _fail(message: str) -> int:
    print(f"aqueduct wire: {message}".replace("\n", " "), file=sys.stderr)
    return EXIT_BAD_INPUT


def _arg(value: str) -> str:
    return sys.stdin.read() if value == "-" else value


def _decode(args: argparse.Namespace) -> int:
    text = "".join(_arg(args.hex).split())
    try:
        data = bytes.fromhex(text)
    except ValueError:
        return _fail(f"not valid hex: {text[:80]!r}")
    try:
        out = decode_kind(args.kind, data, args.max_frame_size)
    except ProtocolError as exc:
        return _fail(f"protocol error ({exc.code.name}): {exc}")
    print(json.dumps(out, indent=args.indent))
    return 0


def _encode(args: argparse.Namespace) -> int:
    try:
        obj = json.loads(_arg(args.json))
    except ValueError as exc:
        return _fail(f"not valid JSON: {exc}")
    try:
        frames = frames_from_json(obj)
        data = encode_frames(frames)
    except (ValueError, ProtocolError) as exc:
        return _fail(f"not a valid frame: {exc}")
    print(data.hex())
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `aqueduct wire decode|encode`."""
    wire = sub.add_parser("wire", help="decode and encode Aqueduct frames (a dissector)")
    actions = wire.add_subparsers(dest="action", required=True)

    dec = actions.add_parser("decode", help="bytes (hex) to frames as vector JSON")
    dec.add_argument("hex", help="the bytes of a stream or datagram, as hex (whitespace ignored; - for stdin)")
    dec.add_argument("--kind", choices=VECTOR_KINDS, default="frames", help="what the bytes hold (default: frames)")
    dec.add_argument(
        "--max-frame-size", type=int, default=DEFAULT_MAX_FRAME_SIZE,
        help="largest declared length (default: %(default)s B)"
    )
    dec.add_argument("--indent", type=int, default=None, help="pretty-print JSON with this indent")
    dec.set_defaults(func=_decode)

    enc = actions.add_parser("encode", help='frames as JSON ({"frames": [...]} or a list) to hex bytes')
    enc.add_argument("json", help="the frames, in the vector JSON schema (- for stdin)")
    enc.set_defaults(func=_encode)

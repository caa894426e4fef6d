"""`aqueduct replay DIR --to URL`: send a recorded channel's messages again (aqueduct/recording/replay.py)."""

from __future__ import annotations

import argparse
import asyncio
import sys


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `aqueduct replay`."""
    p = sub.add_parser("replay", help="send a recorded channel's messages again (raw codec, on the entrypoint)")
    p.add_argument("recording", help="recording directory")
    p.add_argument("--to", required=True, metavar="URL", help="aqueduct://host:port of a raw-codec server")
    p.add_argument("--ca", help="CA certificate (PEM) to verify the server with")
    p.add_argument("--fingerprint", help="pinned SHA-256 fingerprint of the server certificate")
    p.add_argument("--connection", help="recorded connection id (default: the one with the busiest channel)")
    p.add_argument("--channel", type=int, help="recorded channel id (default: the busiest channel)")
    p.add_argument("--direction", choices=["out", "in"], default="out",
                   help="replay what was sent (out, default) or received (in)")
    p.add_argument("--zero-fill", action="store_true",
                   help="replay messages recorded without payload bytes as zeros of the recorded length")
    p.add_argument("--fast", action="store_true", help="as fast as possible instead of the recorded pace")
    p.add_argument("--speed", type=float, default=1.0, help="pace multiplier (2: twice as fast as recorded)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the target, plan, say what will be sent, send it."""
    from ..api.endpoints import parse_url
    from ..errors import AqueductError
    from ..recording.reader import RecordingError
    from ..recording.replay import plan, replay

    parse_url(args.to)  # a bad target is refused (ConfigError) before the recording is read
    try:
        the_plan = plan(args.recording, args.connection, args.channel, args.direction, zero_fill=args.zero_fill)
    except (RecordingError, OSError) as exc:
        print(f"aqueduct replay: {exc}", file=sys.stderr)
        return 2
    messages = the_plan.messages
    span = messages[-1].offset_s
    synthetic = "" if all(m.recorded_payload for m in messages) else " (no payloads recorded: zero-filled)"
    print(f"replaying {len(messages)} messages of channel {the_plan.channel} of connection {the_plan.connection}, "
          f"recorded over {span:.3f} s{synthetic}, {'flat out' if args.fast else f'at {args.speed}x pace'}",
          flush=True)  # fmt: skip
    try:
        sent = asyncio.run(
            replay(the_plan, args.to, paced=not args.fast, speed=args.speed, ca=args.ca, fingerprint=args.fingerprint)
        )
    except (AqueductError, OSError, TimeoutError) as exc:
        print(f"aqueduct replay: {exc}", file=sys.stderr)
        return 1
    print(f"sent {sent} messages to {args.to}")
    return 0

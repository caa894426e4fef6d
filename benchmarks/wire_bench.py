"""Wire codec throughput: encode and decode rates for typical frames.

Run: `.venv/bin/python benchmarks/wire_bench.py [--seconds S]`. For each case
the frame is encoded and decoded in a tight loop for about S seconds per
round (best of 3 rounds is reported, as the least disturbed); decoding goes
through `decode_frames`, the path a datagram or finished stream takes, and
through `FrameReader.feed` with 100 frames per chunk, the stream path.
Target: decode of 64-byte Message frames at 300,000 frames/s or more.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from aqueduct.wire import AckNackUnreliable, Frame, FrameReader, Message, decode_frames, encode_frame, encode_message

CASES: dict[str, Frame] = {
    "Message, 64 B payload": Message(0x1B, 123_456, (), bytes(64)),
    "Message, 16 KiB payload": Message(0x1B, 123_456, (), bytes(16 * 1024)),
    "AckNackUnreliable, 100 ranges": AckNackUnreliable(tuple(1 + i % 50 for i in range(100))),
}
TARGET_DECODE_64B = 300_000


def rate(fn: Callable[[], object], seconds: float, per_call: int = 1) -> float:
    """Best calls-per-second of `fn` (times `per_call`) over 3 rounds of about `seconds` each."""
    best = 0.0
    for _ in range(3):
        n, batch = 0, 1000
        start = time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            for _ in range(batch):
                fn()
            n += batch
        best = max(best, n * per_call / elapsed)
    return best


def measure(frame: Frame, seconds: float) -> tuple[float, float, float]:
    """Encode, whole-buffer decode and stream decode rates for one frame, in frames/s."""
    data = encode_frame(frame)
    if isinstance(frame, Message):
        m = frame
        encode: Callable[[], object] = lambda: encode_message(m.channel, m.number, m.attachments, m.payload)  # noqa: E731
    else:
        encode = lambda: encode_frame(frame)  # noqa: E731
    stream_chunk = data * 100
    reader = FrameReader()
    return (
        rate(encode, seconds),
        rate(lambda: decode_frames(data), seconds),
        rate(lambda: reader.feed(stream_chunk), seconds / 10, per_call=100),
    )


def main() -> int:
    """Print the table; exit 1 if 64-byte Message decoding misses its target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="length of one measuring round per cell")
    args = parser.parse_args()
    print(f"{'frame':32} {'bytes':>7} {'encode/s':>12} {'decode/s':>12} {'stream/s':>12} {'decode MB/s':>12}")
    decode_64 = 0.0
    for name, frame in CASES.items():
        size = len(encode_frame(frame))
        enc, dec, stream = measure(frame, args.seconds)
        print(f"{name:32} {size:>7} {enc:>12,.0f} {dec:>12,.0f} {stream:>12,.0f} {dec * size / 1e6:>12,.1f}")
        if name.startswith("Message, 64 B"):
            decode_64 = dec
    verdict = "meets" if decode_64 >= TARGET_DECODE_64B else "MISSES"
    print(f"64 B Message decode: {decode_64:,.0f} frames/s {verdict} the target of {TARGET_DECODE_64B:,}")
    return 0 if decode_64 >= TARGET_DECODE_64B else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Positive negative range data: alternating run lengths from a context start.

The ints are run lengths: positive, negative, positive, ... counted from a
start the context defines. No run may be 0, except the first when more
follow (a leading 0 says "the first run is negative"). `ranges_to_runs`
and `runs_to_ranges` convert between the wire ints and explicit
(start, stop, positive) runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from .errors import ProtocolError, encoding_error
from .varint import Incomplete, encode_varint, read_bytes, read_varint


def validate_ranges(ranges: Sequence[int]) -> None:
    """Raise ProtocolError unless `ranges` obeys the zero rule."""
    for i, run in enumerate(ranges):
        if run == 0 and (i != 0 or len(ranges) == 1):
            raise encoding_error(
                "range data holds a lone 0" if len(ranges) == 1 else f"range data holds a 0 at position {i}"
            )


def encode_ranges(ranges: Sequence[int]) -> bytes:
    """Encode range data (the inner ints wrapped in a var len byte array)."""
    validate_ranges(ranges)
    inner = b"".join(encode_varint(r) for r in ranges)
    return encode_varint(len(inner)) + inner


def read_ranges(buf: bytes, pos: int, limit: int) -> tuple[tuple[int, ...], int]:
    """Read range data at `pos`; return (ints, position after it)."""
    start = pos
    inner, pos = read_bytes(buf, pos, limit, "range data")
    base = pos - len(inner)
    out: list[int] = []
    ipos = 0
    n = len(inner)
    try:
        while ipos < n:
            value, ipos = read_varint(inner, ipos, base)
            out.append(value)
    except Incomplete:  # the array is complete, so a cut int is malformed
        raise encoding_error(f"range data at offset {start} ends inside a var len int") from None
    try:
        validate_ranges(out)
    except ProtocolError as exc:
        raise encoding_error(f"{exc} (range data at offset {start})") from None
    return tuple(out), pos


def ranges_to_runs(start: int, ranges: Iterable[int]) -> Iterator[tuple[int, int, bool]]:
    """Yield (first, stop, positive) for each run; stop is exclusive."""
    positive = True
    at = start
    for run in ranges:
        if run:
            yield at, at + run, positive
        at += run
        positive = not positive


def runs_to_ranges(start: int, runs: Iterable[tuple[int, int, bool]]) -> list[int]:
    """Encode contiguous (first, stop, positive) runs beginning at `start` as range ints.

    Adjacent runs of the same sign are merged; a first negative run gets the
    leading 0.
    """
    out: list[int] = []
    positive = True
    at = start
    for first, stop, pos in runs:
        if first != at:
            raise ValueError("runs must be contiguous from start")
        if stop <= first:
            continue
        if pos == positive:
            out.append(stop - first)
            positive = not positive
        elif out:
            out[-1] += stop - first
        else:
            out.extend((0, stop - first))
            positive = True
        at = stop
    return out

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
from .varint import MAX_VARINT, encode_int_array, read_int_array

MAX_RANGE_END = MAX_VARINT
"""The largest end (one past the last number) an ack range can name: a message number must be below it, and
the unreliable messages a sender declares may total at most this, or no ack could name them (2^64 - 1)."""


def validate_ranges(ranges: Sequence[int]) -> None:
    """Raise ProtocolError unless `ranges` obeys the zero rule."""
    if len(ranges) == 1 and ranges[0] == 0:
        raise encoding_error("range data holds a lone 0")
    if 0 in ranges[1:]:
        raise encoding_error(f"range data holds a 0 at position {list(ranges).index(0, 1)}")


def encode_ranges(ranges: Sequence[int]) -> bytes:
    """Encode range data (the inner ints wrapped in a var len byte array)."""
    validate_ranges(ranges)
    return encode_int_array(ranges)


def read_ranges(buf: bytes, pos: int, limit: int) -> tuple[tuple[int, ...], int]:
    """Read range data at `pos`; return (ints, position after it)."""
    out, end = read_int_array(buf, pos, limit, "range data")
    try:
        validate_ranges(out)
    except ProtocolError as exc:
        raise encoding_error(f"{exc} (range data at offset {pos})") from None
    return out, end


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

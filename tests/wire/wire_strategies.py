"""Hypothesis strategies for wire values and frames, shared by the wire tests,
and `split`, which cuts bytes into the chunks a stream might deliver.

Integers lean on the edges (0, 127, 128, 2^63, 2^64-1 and powers of two)
because that is where var len int bugs live.
"""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from aqueduct.wire import (
    MAX_VARINT,
    AckNackUnreliable,
    AckReliable,
    ChannelControl,
    ClosedChannelLost,
    CloseReceiver,
    ConnectionControl,
    FinishSender,
    Frame,
    Message,
    SentUnreliable,
    Version,
)

EDGES = sorted({0, 1, 127, 128, MAX_VARINT, *(1 << k for k in range(64)), *((1 << (7 * k)) - 1 for k in range(1, 10))})

u64: st.SearchStrategy[int] = st.one_of(st.sampled_from(EDGES), st.integers(0, MAX_VARINT), st.integers(0, 300))
positive: st.SearchStrategy[int] = u64.filter(bool)

ascii_text = st.text(alphabet=st.characters(max_codepoint=127), max_size=20)
headers = st.lists(st.tuples(ascii_text.filter(bool), st.binary(max_size=40)), max_size=8).map(tuple)


@st.composite
def ranges(draw: st.DrawFn) -> tuple[int, ...]:
    """Range ints obeying the zero rule: no 0 except a leading one with more after it."""
    runs: list[int] = draw(st.lists(positive, max_size=12))
    lead_zero: bool = draw(st.booleans())
    return (0, *runs) if runs and lead_zero else tuple(runs)


FRAME_STRATEGIES: dict[str, st.SearchStrategy[Frame]] = {
    "Version": st.builds(Version, ascii_text),
    "ConnectionControl": st.builds(ConnectionControl, headers),
    "ChannelControl": st.builds(ChannelControl, u64),
    "Message": st.builds(
        Message,
        u64,
        u64,
        st.lists(u64, max_size=6).map(tuple),
        st.one_of(st.binary(max_size=64), st.binary(min_size=120, max_size=300)),
    ),
    "SentUnreliable": st.builds(SentUnreliable, u64),
    "AckReliable": st.builds(AckReliable, ranges()),
    "AckNackUnreliable": st.builds(AckNackUnreliable, ranges()),
    "FinishSender": st.builds(FinishSender, u64),
    "CloseReceiver": st.builds(CloseReceiver, ranges()),
    "ClosedChannelLost": st.builds(ClosedChannelLost, u64),
}
frames: st.SearchStrategy[Frame] = st.one_of(*FRAME_STRATEGIES.values())

frame_lists = st.lists(frames, min_size=1, max_size=8)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    """`data` cut at the given points (taken modulo its length), in order, with no empty chunk."""
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]

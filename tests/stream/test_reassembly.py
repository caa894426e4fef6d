"""Reassembly under attack (issue 26 item 6): overlapping chunks, DATA longer than max_payload, the per-connection
bound on received bytes, and the cost of filling a hole under thousands of out-of-order chunks.

The cost is counted, not timed: every line the interpreter runs while the chunks arrive and the hole fills
(`sys.settrace`, in every module, so a sorted container's own work is counted too). Quadratic reassembly runs
about 16 times the lines for 4 times the chunks; linear or n log n about 4-5 times.
"""

from __future__ import annotations

import itertools
import random
import sys
from types import FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeron_compat.marlin.errors import StreamWireError
from aeron_compat.marlin.limits import StreamConfig
from aeron_compat.marlin.packets import Data, decode, encode
from aeron_compat.marlin.recv import RecvStream
from tests.stream.helpers import Pair
from tests.stream.simnet import A, SimNet


def test_overlapping_chunks_are_stored_once_within_the_window() -> None:
    """8,192 chunks of 60 KB one byte apart (the attack held +456 MB): nothing is stored twice."""
    s = RecvStream(window=4 << 20, max_chunks=8192)
    for i in range(8192, 0, -1):
        s.accept(i, bytes(60_000), fin=False)
        assert s.buffered <= 4 << 20
    assert s.buffered == 8191 + 60_000  # offsets 1 .. 8191 + 60 000, each byte once
    assert s.accept(0, b"x", fin=False)
    assert s.buffered == 0 and len(s.readable) == 8192 + 60_000


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 60)), max_size=60), read_every=st.integers(1, 9))
def test_reassembly_delivers_each_byte_once_in_order(pieces: list[tuple[int, int]], read_every: int) -> None:
    """Any arrival order and overlap of a stream's pieces: the reader sees exactly the stream's bytes,
    the held bytes never exceed the distinct bytes received beyond the read offset."""
    truth = random.Random(1).randbytes(400)
    s = RecvStream(window=1 << 20, max_chunks=1 << 20)
    out = bytearray()
    for n, (off, length) in enumerate([*pieces, (0, 400)]):
        assert s.accept(off, truth[off:off + length], fin=False)
        if n % read_every == 0:
            out += s.read()
        keys = list(s.chunks)
        for a, b in itertools.pairwise(keys):
            assert a + len(s.chunks[a]) <= b  # disjoint, ascending
        assert all(k > s.read_offset for k in keys)
        assert s.buffered == sum(len(v) for v in s.chunks.values())
    out += s.read()
    assert bytes(out) == truth


def _lines_to_fill_a_hole_under(n: int) -> int:
    s = RecvStream(window=1 << 30, max_chunks=1 << 20)
    order = list(range(1, n))
    random.Random(n).shuffle(order)
    count = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        for off in order:
            s.accept(off, b"z", fin=False)
        s.accept(0, b"z", fin=False)
    finally:
        sys.settrace(None)
    assert len(s.readable) == n and not s.chunks
    return count


def test_filling_a_hole_under_many_one_byte_chunks_is_not_quadratic() -> None:
    small, large = _lines_to_fill_a_hole_under(500), _lines_to_fill_a_hole_under(2000)
    print(f"\nlines run: {small} for 500 chunks, {large} for 2000 ({large / small:.1f}x)")
    assert large < 7 * small


def test_decode_refuses_data_longer_than_max_payload() -> None:
    wire = encode(Data(1, 2, 0, 0, 0, bytes(1351)))
    assert decode(wire).data == bytes(1351)  # the codec alone has no cap
    with pytest.raises(StreamWireError, match="1351"):
        decode(wire, max_data=1350)
    assert len(decode(encode(Data(1, 2, 0, 0, 0, bytes(1350))), max_data=1350).data) == 1350


def test_the_endpoint_drops_data_longer_than_its_max_payload() -> None:
    net = SimNet()
    pair = Pair(net, StreamConfig(max_payload=1000))
    net.run_until(pair.established)
    s, c = pair.server, pair.client
    assert s is not None
    pair.b.receive(encode(Data(c.local_id, s.local_id, 0, 0, 5, bytes(1001))), A, net.now)
    assert pair.b.counters["malformed"] == 1 and s.state_sizes()["recv_buffered_bytes"] == 0


def test_received_bytes_are_bounded_per_connection() -> None:
    """Out-of-order bytes on many streams: each stream within its window, the connection within its own bound."""
    cfg = StreamConfig(max_payload=1000, recv_window=100_000, recv_connection_window=250_000, max_streams=64)
    net = SimNet()
    pair = Pair(net, cfg)
    net.run_until(pair.established)
    s, c = pair.server, pair.client
    assert s is not None
    pn = 0
    for sid in range(0, 40, 2):
        for off in range(1, 90_000, 1000):
            pn += 1
            s.on_packet(Data(c.local_id, s.local_id, sid, pn, off, bytes(1000)), net.now)
    sizes = s.state_sizes()
    assert sizes["recv_buffered_bytes"] <= cfg.recv_connection_window


def test_a_stream_at_its_read_offset_still_moves_when_the_connection_bound_is_full() -> None:
    """The bound never deadlocks a reader: in-order data for a stream with nothing readable is taken anyway."""
    cfg = StreamConfig(max_payload=1000, recv_window=100_000, recv_connection_window=50_000, max_streams=64)
    net = SimNet()
    pair = Pair(net, cfg)
    net.run_until(pair.established)
    s, c = pair.server, pair.client
    assert s is not None
    pn = 0
    for off in range(1000, 60_000, 1000):  # stream 0: out of order, fills the connection's bound
        pn += 1
        s.on_packet(Data(c.local_id, s.local_id, 0, pn, off, bytes(1000)), net.now)
    assert s.state_sizes()["recv_buffered_bytes"] <= cfg.recv_connection_window
    pn += 1
    s.on_packet(Data(c.local_id, s.local_id, 2, pn, 5000, bytes(1000)), net.now)  # out of order: refused
    assert s.recv_streams[2].buffered == 0
    pn += 1
    s.on_packet(Data(c.local_id, s.local_id, 0, pn, 0, bytes(1000)), net.now)  # the hole: taken, drains
    assert len(s.read(0)) == 51_000  # the bound (50 000) plus the one packet that fills the hole
    assert s.state_sizes()["recv_buffered_bytes"] == 0

"""Hostile input: every per-peer structure of the Stream endpoint stays within its configured limit."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeron_compat.marlin.connection import State
from aeron_compat.marlin.endpoint import Endpoint
from aeron_compat.marlin.errors import StreamLimitExceeded, StreamProtocolError
from aeron_compat.marlin.limits import MS, StreamConfig
from aeron_compat.marlin.packets import Ack, Data, Dial, Rst, decode, encode
from aeron_compat.marlin.recv import ReceivedPackets, RecvStream
from tests.stream.helpers import Pair
from tests.stream.simnet import A, B, SimNet

CFG = StreamConfig(max_connections=8, max_half_open=4, max_streams=5, recv_window=10_000, max_recv_chunks=10,
                   max_ack_ranges=6, send_buffer=1000)


def established() -> tuple[SimNet, Pair]:
    net = SimNet()
    pair = Pair(net, CFG)
    net.run_until(pair.established)
    return net, pair


def test_dial_flood_from_many_addresses_is_capped_at_the_half_open_limit() -> None:
    b = Endpoint(CFG, listening=True, rng=random.Random(1))
    for i in range(100):
        b.receive(encode(Dial(i + 1)), (f"10.9.0.{i + 1}", 1000 + i), 0)
    assert b.state_sizes()["half_open"] == CFG.max_half_open
    assert b.counters["evicted"] == 100 - CFG.max_half_open  # the oldest gave way to each newer DIAL


FLOOD_CFG = StreamConfig(max_half_open=16, max_half_open_per_source=4)


def test_one_source_holds_at_most_its_share_of_half_open_slots() -> None:
    b = Endpoint(FLOOD_CFG, listening=True, rng=random.Random(1))
    for i in range(100):
        b.receive(encode(Dial(i + 1)), ("10.9.0.1", 1000 + i), 0)  # one address, many ports
    assert b.state_sizes()["half_open"] == FLOOD_CFG.max_half_open_per_source < FLOOD_CFG.max_half_open


def _flood(net: SimNet, target: Endpoint, sources: int) -> Callable[[], None]:
    """Every call, one DIAL from the next of `sources` addresses (ports vary too)."""
    n = 0

    def step() -> None:
        nonlocal n
        n += 1
        target.receive(encode(Dial(0x10000 + n)), (f"10.9.{n % sources // 250}.{n % sources % 250 + 1}", 1000 + n),
                       net.now)
    return step


@pytest.mark.parametrize("sources", [1, 1000])
def test_a_good_dial_completes_during_a_dial_flood(sources: int) -> None:
    """A flood fills the half-open table before the good DIAL arrives and keeps sending one DIAL per ms during
    its handshake (15 ms here): the good dial completes (it used to be refused while the table was full)."""
    net = SimNet()
    pair = Pair(net, FLOOD_CFG)
    flood = _flood(net, pair.b, sources)
    for _ in range(100):
        flood()
    net.app = flood
    net.run_until(pair.established, limit_ns=2_000 * MS)
    assert pair.b.state_sizes()["half_open"] <= FLOOD_CFG.max_half_open


def test_repeated_dial_from_one_peer_reuses_its_connection() -> None:
    b = Endpoint(CFG, listening=True, rng=random.Random(1))
    for _ in range(10):
        b.receive(encode(Dial(42)), A, 0)
    assert len(b.connections) == 1
    assert len(b.transmit(0)) == 10  # each DIAL answered with the same DIALCONF


def test_half_open_connections_expire() -> None:
    net = SimNet()
    b = net.add(B, Endpoint(CFG, listening=True, rng=random.Random(1)))
    b.receive(encode(Dial(42)), A, 0)
    assert b.state_sizes()["half_open"] == 1
    net.run_until(lambda: (b.events(), not b.connections)[1])  # DIALCONF retries run out, then it is dropped
    assert b.state_sizes()["connections"] == 0


def test_streams_opened_by_the_peer_are_capped() -> None:
    _net, pair = established()
    s, c = pair.server, pair.client
    assert s is not None
    for sid in range(50):
        s.on_packet(Data(c.local_id, s.local_id, sid, sid, 0, b"x"), 0)
    assert s.state_sizes()["streams"] == CFG.max_streams


def test_out_of_order_fragments_per_stream_are_capped() -> None:
    _net, pair = established()
    s, c = pair.server, pair.client
    assert s is not None
    for i in range(100):
        s.on_packet(Data(c.local_id, s.local_id, 0, i, 10 + 3 * i, b"ab"), 0)
    sizes = s.state_sizes()
    assert sizes["recv_chunks"] == CFG.max_recv_chunks
    assert sizes["recv_buffered_bytes"] <= CFG.recv_window


def test_ack_ranges_remembered_are_capped() -> None:
    r = ReceivedPackets(6)
    for pn in range(0, 1000, 2):
        r.add(pn)
    assert len(r) == 6
    largest, entries = r.ack_entries(151)
    assert largest == 998 and len(entries) == 11


@settings(max_examples=200)
@given(pns=st.lists(st.integers(0, 300), max_size=200))
def test_received_ranges_match_the_set_of_packets_seen(pns: list[int]) -> None:
    r = ReceivedPackets(1000)
    seen: set[int] = set()
    for pn in pns:
        assert r.add(pn) == (pn not in seen)  # False exactly for duplicates
        seen.add(pn)
    if pns:
        largest, entries = r.ack_entries(10_000)
        acked = {pn for low, high in Ack(0, 0, largest, entries).acked() for pn in range(low, high + 1)}
        assert acked == set(pns)


def test_moved_fin_is_a_protocol_error_that_resets_the_connection() -> None:
    _net, pair = established()
    s, c = pair.server, pair.client
    assert s is not None
    s.on_packet(Data(c.local_id, s.local_id, 0, 0, 0, b"abc", fin=True), 0)
    s.on_packet(Data(c.local_id, s.local_id, 0, 1, 0, b"abcd", fin=True), 0)
    assert s.state is State.CLOSED and isinstance(s.error, StreamProtocolError)
    assert [type(decode(d)) for d in s.poll(0)][-1] is Rst


def test_data_past_fin_is_a_protocol_error() -> None:
    stream = RecvStream(window=100, max_chunks=4)
    stream.accept(0, b"ab", fin=True)
    try:
        stream.accept(2, b"c", fin=False)
    except StreamProtocolError:
        return
    raise AssertionError("data past the FIN was accepted")


def test_send_buffer_limit_is_a_typed_error() -> None:
    _net, pair = established()
    sid = pair.client.open_stream()
    pair.client.send(sid, b"x" * CFG.send_buffer)
    try:
        pair.client.send(sid, b"y")
    except StreamLimitExceeded:
        return
    raise AssertionError("send buffer overflow accepted")


def test_local_streams_are_capped() -> None:
    _net, pair = established()
    for _ in range(CFG.max_streams):
        pair.client.open_stream()
    try:
        pair.client.open_stream()
    except StreamLimitExceeded:
        return
    raise AssertionError("stream limit not enforced")


@settings(max_examples=100, deadline=None)
@given(blobs=st.lists(st.binary(max_size=80), max_size=60))
def test_garbage_never_raises_and_never_grows_state_past_the_limits(blobs: list[bytes]) -> None:
    _net, pair = established()
    s, c = pair.server, pair.client
    assert s is not None
    ids = s.local_id.to_bytes(4, "big")
    peer = c.local_id.to_bytes(4, "big")
    for blob in blobs:
        pair.b.receive(blob, A, 0)
        pair.b.receive(b"\x00" + blob[:1] + peer + ids + blob[1:], A, 0)
    sizes = pair.b.state_sizes()
    assert sizes["connections"] <= CFG.max_connections
    assert sizes.get("streams", 0) <= CFG.max_streams
    assert sizes.get("recv_chunks", 0) <= CFG.max_recv_chunks * CFG.max_streams
    assert sizes.get("ack_ranges", 0) <= CFG.max_ack_ranges


def test_security_md_states_the_stream_defaults_of_the_code() -> None:
    import re
    from pathlib import Path

    text = (Path(__file__).parents[2] / "SECURITY.md").read_text()
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "s": 1_000_000_000, "": 1}
    found = re.findall(r"`StreamConfig\.(\w+)` \((\d+) ?(KiB|MiB|s)?\)", text)
    assert len(found) >= 8
    defaults = StreamConfig()
    for name, number, unit in found:
        assert getattr(defaults, name) == int(number) * units[unit], name


def test_overtaken_packets_are_capped_at_a_window() -> None:
    cfg = StreamConfig(max_payload=10, max_cwnd=100, initial_cwnd_packets=10, pacing_burst_packets=64)
    net = SimNet()
    pair = Pair(net, cfg)
    net.run_until(pair.established)
    c, s = pair.client, pair.server
    assert s is not None
    sid = c.open_stream()
    c.send(sid, b"x" * 1000)
    now = net.now
    for _ in range(5):  # a peer acking only the newest packet of each flight, all within 50 ms
        pns = [p.packet_number for p in (decode(d) for d in c.poll(now)) if isinstance(p, Data)]
        c.on_packet(Ack(s.local_id, c.local_id, pns[-1], (1,)), now)
        assert c.state_sizes()["overtaken"] <= cfg.max_cwnd // cfg.max_payload
        now += MS
    assert c.stats["lost"] > 0  # the oldest went out as lost

"""Finished streams leave a connection: one connection carries many times `max_streams` streams in its life.

A send half is done when its FIN and every byte are acknowledged, a receive half when the FIN arrived and the
application read every byte; then it leaves the tables and stops counting toward `max_streams`. Its id stays
used: a late duplicate of its DATA or FIN is acknowledged and dropped, never a new stream nor bytes delivered
twice (decision MARLIN-8).
"""

from __future__ import annotations

import asyncio
import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeron_compat.marlin.aio import StreamEndpoint
from aeron_compat.marlin.cli import send_bytes, serve_connection
from aeron_compat.marlin.connection import Readable, StreamOpened
from aeron_compat.marlin.errors import StreamError
from aeron_compat.marlin.limits import MS, StreamConfig
from aeron_compat.marlin.packets import Ack, Data, decode
from aeron_compat.marlin.ranges import StreamIds
from tests.stream.helpers import Pair, payload
from tests.stream.simnet import B, SimNet

CFG = StreamConfig(max_streams=8)
STREAMS = 3 * CFG.max_streams


def _request_reply(pair: Pair, net: SimNet, i: int) -> int:
    """The client opens a stream, sends a body and FIN; the server answers on the same id with FIN."""
    server = pair.server
    assert server is not None
    sid = pair.client.open_stream()
    pair.client.send(sid, payload(3000, i), fin=True)
    net.run_until(lambda: pair.finished(sid))
    server.send(sid, payload(500, 1000 + i), fin=True)

    def answered() -> bool:
        pair.pump()
        return pair.client.at_eof(sid) and pair.client.all_sent() and server.all_sent()

    net.run_until(answered)
    return sid


@pytest.mark.parametrize(("seed", "loss", "dup", "jitter"),
                         [(11, 0.0, 0.0, 0), (11, 0.05, 0.1, 3 * MS), (12, 0.1, 0.2, 10 * MS)])
def test_one_connection_carries_three_times_max_streams_in_sequence(seed: int, loss: float, dup: float,
                                                                     jitter: int) -> None:
    net = SimNet(seed=seed, loss=loss, dup=dup, jitter_ns=jitter)
    pair = Pair(net, CFG)
    net.run_until(pair.established)
    server = pair.server
    assert server is not None
    sids = [_request_reply(pair, net, i) for i in range(STREAMS)]
    net.run_until(lambda: not net._queue)  # late duplicates and ACKs all delivered
    pair.pump()
    assert len(set(sids)) == STREAMS
    assert pair.opened == sids  # each opened once on the server, never again by a late duplicate
    assert pair.opened_a == []  # the server's answers open nothing on the client: the ids are its own
    for i, sid in enumerate(sids):  # each byte delivered exactly once
        assert bytes(pair.got[sid]) == payload(3000, i)
        assert bytes(pair.got_a[sid]) == payload(500, 1000 + i)
    assert pair.client.state_sizes()["streams"] == 0
    assert server.state_sizes()["streams"] == 0
    if dup:  # late duplicates of ended streams arrived, and were dropped
        assert server.stats["late_packets"] + pair.client.stats["late_packets"] > 0


def test_a_late_duplicate_of_a_finished_stream_is_acked_and_dropped() -> None:
    net = SimNet(seed=2)
    pair = Pair(net, CFG)
    net.run_until(pair.established)
    server = pair.server
    assert server is not None
    sid = _request_reply(pair, net, 0)
    pair.pump()
    assert server.state_sizes()["streams"] == 0
    c = pair.client
    net.sent.clear()
    for pn, (offset, data, fin) in enumerate([(0, payload(3000, 0)[:1000], False), (2000, payload(3000, 0)[2000:],
                                                                                      True)]):
        server.on_packet(Data(c.local_id, server.local_id, sid, 10_000 + pn, offset, data, fin), net.now)
    assert [ev for ev in server.events if isinstance(ev, StreamOpened | Readable)] == []
    assert server.state_sizes()["streams"] == 0
    assert server.at_eof(sid) and server.read(sid) == b""
    net.run_until(lambda: any(isinstance(p := decode(d), Ack) and p.largest == 10_001
                              for d, src, _ in net.sent if src == B))


def test_sending_again_on_a_finished_stream_is_an_error() -> None:
    net = SimNet(seed=4)
    pair = Pair(net, CFG)
    net.run_until(pair.established)
    sid = _request_reply(pair, net, 0)
    with pytest.raises(StreamError):
        pair.client.send(sid, b"more")
    assert sid not in pair.client.send_streams


def test_answering_on_the_peers_stream_opens_no_second_stream() -> None:
    """At `max_streams` live, a reply on a stream the peer opened is no new stream (it was refused as one)."""
    net = SimNet(seed=6)
    pair = Pair(net, StreamConfig(max_streams=1))
    net.run_until(pair.established)
    server = pair.server
    assert server is not None
    sid = pair.client.open_stream()
    pair.client.send(sid, b"ask")  # no FIN: the server's receiving half stays live
    net.run_until(lambda: pair.established() and bytes(pair.got.get(sid, b"")) == b"ask")
    server.send(sid, b"answer", fin=True)
    net.run_until(lambda: pair.established() and pair.client.at_eof(sid))
    assert bytes(pair.got_a[sid]) == b"answer"


def test_stream_ids_a_peer_leaves_out_are_bounded_ranges() -> None:
    cfg = StreamConfig(max_streams=8, max_stream_id_ranges=4)
    net = SimNet(seed=5)
    pair = Pair(net, cfg)
    net.run_until(pair.established)
    s, c = pair.server, pair.client
    assert s is not None
    for n in range(40):  # every other id of the peer's parity, each a whole stream at once
        sid = 4 * n + 1
        s.on_packet(Data(c.local_id, s.local_id, sid, n, 0, b"x", True), net.now)
        assert s.read(sid) == b"x" and s.at_eof(sid)
        sizes = s.state_sizes()
        assert sizes["streams"] == 0
        assert sizes["stream_id_ranges"] <= cfg.max_stream_id_ranges
    events = list(s.events)
    assert sum(isinstance(ev, StreamOpened) for ev in events) == 40
    s.on_packet(Data(c.local_id, s.local_id, 4 * 39 + 1, 40, 0, b"x", True), net.now)  # the newest: still used
    assert list(s.events) == events


@given(ids=st.lists(st.integers(0, 0xFFFF), max_size=200), max_ranges=st.integers(1, 300))
def test_used_stream_ids_keep_every_id_added_within_their_ranges(ids: list[int], max_ranges: int) -> None:
    used = StreamIds(max_ranges)
    for sid in ids:
        used.add(sid)
        assert len(used) <= max_ranges
    assert all(sid in used for sid in ids)
    if max_ranges >= len(ids):  # nothing was filled in: exactly the ids added
        near = {n for sid in ids for n in (sid - 2, sid - 1, sid + 1, sid + 2) if 0 <= n <= 0xFFFF}
        assert {sid for sid in near if sid in used} == near & set(ids)


def test_one_asyncio_connection_carries_three_times_max_streams_in_sequence() -> None:
    async def main() -> None:
        server = await StreamEndpoint.listen("127.0.0.1", 0, config=CFG)
        client = await StreamEndpoint.bind(config=CFG)
        conn = await asyncio.wait_for(client.dial(server.address), 30)
        sconn = await asyncio.wait_for(server.accept(), 30)
        serving = asyncio.ensure_future(serve_connection(sconn))
        for i in range(STREAMS):
            body = payload(5000, i)
            assert await asyncio.wait_for(send_bytes(conn, body), 30) == hashlib.sha256(body).hexdigest()
        assert conn.engine.state_sizes()["streams"] <= 1  # the last one's send half may await its ACK
        assert len(conn.streams) <= 1
        assert sconn.engine.state_sizes()["streams"] <= 1 and len(sconn.streams) <= 1
        serving.cancel()
        client.close()
        server.close()

    asyncio.run(main())

"""Window updates are batched: small grants stay unannounced until a quarter window accumulates, unless the peer
has run (nearly) out of credit, which always hears of a grant at once."""

from __future__ import annotations

from aqueduct.quic.aioquic_connection import UPDATE_FRACTION
from aqueduct.quic.certs import DevCerts

from .test_paced import WINDOW, Pair

QUARTER = WINDOW // UPDATE_FRACTION


def _stream_limit(pair: Pair, sid: int) -> int:
    return int(pair.client._streams[sid].max_stream_data_remote)


def test_small_grants_wait_until_a_quarter_window_accumulates(certs: DevCerts) -> None:
    pair = Pair(certs)
    pair.run()
    sid = pair.client.get_next_available_stream_id(is_unidirectional=True)
    pair.client.send_stream_data(sid, b"x" * (WINDOW // 2))  # the peer keeps half a window of credit
    pair.run()
    before = _stream_limit(pair, sid)
    step = QUARTER // 4
    for _ in range(3):
        pair.server.grant(sid, step)
        pair.run()
        assert _stream_limit(pair, sid) == before
    pair.server.grant(sid, step)  # a full quarter: announced
    pair.run()
    assert _stream_limit(pair, sid) == before + QUARTER


def test_a_peer_out_of_credit_hears_of_a_small_grant_at_once(certs: DevCerts) -> None:
    pair = Pair(certs)
    pair.run()
    sid = pair.client.get_next_available_stream_id(is_unidirectional=True)
    pair.client.send_stream_data(sid, b"x" * (2 * WINDOW))
    pair.run()
    assert pair.received[sid] == WINDOW  # blocked at the stream window
    pair.server.grant(sid, 100)
    pair.run()
    assert pair.received[sid] == WINDOW + 100


def test_a_connection_blocked_by_unread_streams_still_moves_a_read_one(certs: DevCerts) -> None:
    """Unread streams hold most of the connection window; grants on the stream being read get through."""
    pair = Pair(certs)
    pair.run()
    conn_window = pair.server._configuration.max_data
    for _ in range(conn_window // WINDOW - 1):  # unread: they take all but one stream window
        pair.client.send_stream_data(pair.client.get_next_available_stream_id(is_unidirectional=True), b"u" * WINDOW)
    read = pair.client.get_next_available_stream_id(is_unidirectional=True)
    pair.client.send_stream_data(read, b"r" * (4 * WINDOW))
    pair.run()
    assert sum(pair.received.values()) == conn_window  # the connection window is exhausted
    got = pair.received[read]
    pair.server.grant(read, 1000)  # far below a quarter of either window
    pair.run()
    assert pair.received[read] == got + 1000


def test_connection_updates_are_batched_while_the_peer_has_credit(certs: DevCerts) -> None:
    pair = Pair(certs)
    pair.run()
    conn_window = pair.server._configuration.max_data
    sids = []
    for _ in range(conn_window // WINDOW - 1):  # a stream window of connection credit stays with the peer
        sid = pair.client.get_next_available_stream_id(is_unidirectional=True)
        pair.client.send_stream_data(sid, b"y" * WINDOW)
        sids.append(sid)
    pair.run()
    before = pair.client._remote_max_data
    for sid in sids:
        pair.server.grant(sid, QUARTER)
    pair.run()
    assert pair.client._remote_max_data == before  # 3/16 of the window: not announced
    pair.server.grant(sids[0], conn_window // UPDATE_FRACTION - QUARTER * len(sids))
    pair.run()
    assert pair.client._remote_max_data == before + conn_window // UPDATE_FRACTION

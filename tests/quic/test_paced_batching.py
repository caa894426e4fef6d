"""Window updates are batched: grants below a quarter of the window stay unannounced, then go out together."""

from __future__ import annotations

from aqueduct.quic.certs import DevCerts
from aqueduct.quic.paced import UPDATE_FRACTION

from .test_paced import WINDOW, Pair


def _peer_limits(pair: Pair, sid: int) -> tuple[int, int]:
    """(stream, connection) send limits the client has been told."""
    return pair.client._streams[sid].max_stream_data_remote, pair.client._remote_max_data


def test_small_grants_wait_until_a_quarter_window_accumulates(certs: DevCerts) -> None:
    pair = Pair(certs)
    pair.run()
    sid = pair.client.get_next_available_stream_id(is_unidirectional=True)
    pair.client.send_stream_data(sid, b"x" * (2 * WINDOW))
    pair.run()
    assert pair.received[sid] == WINDOW
    before = _peer_limits(pair, sid)
    step = WINDOW // UPDATE_FRACTION // 4
    for _ in range(3):  # three quarters of a quarter: nothing announced, nothing more arrives
        pair.server.grant(sid, step)
        pair.run()
        assert _peer_limits(pair, sid) == before
        assert pair.received[sid] == WINDOW
    pair.server.grant(sid, step)  # a full quarter of the stream window: both updates go out
    pair.run()
    stream_limit, _ = _peer_limits(pair, sid)
    assert stream_limit == before[0] + 4 * step
    assert pair.received[sid] == WINDOW + 4 * step


def test_connection_update_waits_for_a_quarter_of_the_connection_window(certs: DevCerts) -> None:
    pair = Pair(certs)
    pair.run()
    conn_window = pair.server._configuration.max_data
    sids = []
    for _ in range(conn_window // WINDOW):
        sid = pair.client.get_next_available_stream_id(is_unidirectional=True)
        pair.client.send_stream_data(sid, b"y" * (2 * WINDOW))
        sids.append(sid)
    pair.run()
    assert sum(pair.received.values()) == conn_window  # the connection window is the limit
    before = pair.client._remote_max_data
    quarter_stream = WINDOW // UPDATE_FRACTION
    grants = 0
    for sid in sids:  # each stream's grant is announced, but the connection's total is still too small
        if grants + quarter_stream >= conn_window // UPDATE_FRACTION:
            break
        pair.server.grant(sid, quarter_stream)
        grants += quarter_stream
    pair.run()
    assert pair.client._remote_max_data == before
    pair.server.grant(sids[-1], conn_window // UPDATE_FRACTION - grants)
    pair.run()
    assert pair.client._remote_max_data == before + conn_window // UPDATE_FRACTION

"""PacedQuicConnection's lookups (quic/aioquic_connection.py, decision QUIC-35) give aioquic's answers: its stream
lookups the same result, the same exception, the same state after; its frame-level checks the same levels; the
1-RTT objects its writer holds are aioquic's own.

Differential: hypothesis draws a connection's stream state (which streams this end opened, how many the peer
opened and may open, which are still in the table, how many this end may open) and a stream ID; two connections
are built alike from the draw, and aioquic's `QuicConnection` method runs on one, ours on the other. Every stream
ID kind is drawn (client or server initiated, bidirectional or unidirectional), on both sides, including streams
discarded, never opened, beyond the limits, and peer-initiated ones a send may not touch. The frame handlers'
shared tuples of levels answer `in` as aioquic's frozensets did, for every frame type and every level.
"""

from __future__ import annotations

from typing import Any

import pytest
from aioquic import tls
from aioquic.quic.connection import QuicConnection
from aioquic.quic.stream import QuicStream
from hypothesis import given, settings
from hypothesis import strategies as st

from aqueduct.quic.aioquic_connection import FRAME_HANDLERS, PacedQuicConnection
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.settings import TransportSettings, client_configuration, server_configuration

from .test_write_application import ADDR, Pair, Stock  # (Stock: aioquic's own lookups, the reference)

SETTINGS = TransportSettings()
IDS = st.integers(0, 4 * 12 - 1)
"""Stream IDs of every kind (the low two bits), twelve of each."""

state = st.fixed_dictionaries({
    "is_client": st.booleans(),
    "next_uni": st.integers(0, 12), "next_bidi": st.integers(0, 12),        # (streams this end opened, per kind)
    "peer_uni": st.integers(0, 12), "peer_bidi": st.integers(0, 12),        # (streams the peer opened, per kind)
    "peer_max_uni": st.integers(0, 12), "peer_max_bidi": st.integers(0, 12),  # (the peer may open)
    "own_max_uni": st.integers(0, 12), "own_max_bidi": st.integers(0, 12),    # (this end may open)
    "live": st.sets(IDS, max_size=20),   # (of the opened ones, those still in the table)
})


def _build(cls: type[QuicConnection], draw: dict[str, Any], certs: DevCerts) -> QuicConnection:
    """A connection of class `cls` with the drawn stream state (no packet exchanged: these methods read only it)."""
    if draw["is_client"]:
        conf = client_configuration(SETTINGS, server_name="localhost", ca=certs.ca)
        conn = cls(configuration=conf)
    else:
        conf = server_configuration(SETTINGS, cert=certs.cert, key=certs.key)
        conn = cls(configuration=conf, original_destination_connection_id=b"12345678")
    own = 0 if draw["is_client"] else 1  # (bit 0 of the IDs this end opens)
    conn._local_next_stream_id_uni = 4 * draw["next_uni"] + own + 2
    conn._local_next_stream_id_bidi = 4 * draw["next_bidi"] + own
    conn._local_max_streams_uni.used, conn._local_max_streams_uni.value = draw["peer_uni"], draw["peer_max_uni"]
    conn._local_max_streams_bidi.used, conn._local_max_streams_bidi.value = draw["peer_bidi"], draw["peer_max_bidi"]
    conn._remote_max_streams_uni, conn._remote_max_streams_bidi = draw["own_max_uni"], draw["own_max_bidi"]
    for sid in sorted(draw["live"]):
        opened = (sid // 4 < (draw["peer_uni"] if sid & 2 else draw["peer_bidi"]) if (sid & 1) != own
                  else sid < (conn._local_next_stream_id_uni if sid & 2 else conn._local_next_stream_id_bidi))
        if opened:
            stream = conn._streams[sid] = QuicStream(stream_id=sid)
            conn._streams_queue.append(stream)
    return conn


def _outcome(conn: QuicConnection, call: Any) -> Any:
    """What a call returned or raised, and the stream state it left."""
    try:
        result = call(conn)
        if isinstance(result, QuicStream):
            s = result
            result = ("stream", s.stream_id, s.max_stream_data_local, s.max_stream_data_remote, s.is_blocked,
                      s.receiver.is_finished, s.sender.is_finished, s is conn._streams.get(s.stream_id))
        elif result is conn._local_max_streams_uni or result is conn._local_max_streams_bidi:
            result = ("limit", "uni" if result is conn._local_max_streams_uni else "bidi")
    except Exception as exc:  # (the exception is the outcome compared)
        result = ("raised", type(exc), str(getattr(exc, "reason_phrase", exc)))
    left = (sorted(conn._streams), [s.stream_id for s in conn._streams_queue], conn._local_next_stream_id_uni,
            conn._local_next_stream_id_bidi, conn._local_max_streams_uni.used, conn._local_max_streams_bidi.used,
            [s.stream_id for s in conn._streams_blocked_uni], [s.stream_id for s in conn._streams_blocked_bidi],
            conn._streams_blocked_pending)
    return result, left


LOOKUPS = {
    "_get_or_create_stream": lambda sid: lambda c: c._get_or_create_stream(0x08, sid),
    "_get_or_create_stream_for_send": lambda sid: lambda c: c._get_or_create_stream_for_send(sid),
    "_stream_can_receive": lambda sid: lambda c: c._stream_can_receive(sid),
    "_stream_can_send": lambda sid: lambda c: c._stream_can_send(sid),
    "_stream_is_discarded": lambda sid: lambda c: c._stream_is_discarded(sid),
    "_stream_limit": lambda sid: lambda c: c._stream_limit(sid),
}


def test_each_lookup_is_overridden() -> None:
    """The differential below compares something: each lookup is the subclass's own."""
    for name in LOOKUPS:
        assert getattr(PacedQuicConnection, name) is not getattr(QuicConnection, name), name


@pytest.mark.parametrize("name", sorted(LOOKUPS))
@settings(max_examples=150, deadline=None)
@given(draw=state, sid=IDS)
def test_lookups_answer_as_aioquics(certs: DevCerts, name: str, draw: dict[str, Any], sid: int) -> None:
    call = LOOKUPS[name](sid)
    assert _outcome(_build(PacedQuicConnection, draw, certs), call) == _outcome(_build(Stock, draw, certs), call)


def test_frame_levels_answer_as_aioquics_sets(certs: DevCerts) -> None:
    """Every frame type is allowed at exactly the levels aioquic allows it at (its table, built afresh)."""
    conf = client_configuration(SETTINGS, server_name="localhost", ca=certs.ca)
    stock = getattr(QuicConnection(configuration=conf), FRAME_HANDLERS)
    ours = getattr(PacedQuicConnection(configuration=conf), FRAME_HANDLERS)
    assert stock.keys() == ours.keys()
    for frame_type, (_handler, levels) in stock.items():
        assert isinstance(levels, frozenset)
        shared = ours[frame_type][1]
        assert isinstance(shared, tuple)
        for epoch in tls.Epoch:
            assert (epoch in shared) == (epoch in levels), (frame_type, epoch)


def _held(conn: QuicConnection) -> list[bool]:
    """Whether each 1-RTT object the writer holds is aioquic's own (its table's, by identity)."""
    assert isinstance(conn, PacedQuicConnection)
    return [conn._one_rtt_space is conn._spaces[tls.Epoch.ONE_RTT],
            conn._one_rtt_crypto is conn._cryptos[tls.Epoch.ONE_RTT],
            conn._zero_rtt_crypto is conn._cryptos[tls.Epoch.ZERO_RTT],
            conn._one_rtt_crypto_stream is conn._crypto_streams[tls.Epoch.ONE_RTT]]


@pytest.mark.parametrize("adopt", ["paced", "adopted before its first packet", "adopted after it"])
def test_the_held_one_rtt_objects_are_aioquics_through_the_handshake(certs: DevCerts, adopt: str) -> None:
    """The writer's 1-RTT space, crypto pairs and crypto stream (held, not looked up by `tls.Epoch`) are the
    objects in aioquic's tables once the handshake is confirmed and data went both ways, for a client, a server,
    and a server adopted from aioquic's plain connection before or after its first packet (aioquic's server adopts
    before; the other order holds them too)."""
    pair = Pair(PacedQuicConnection, certs, 0)
    if adopt != "paced":
        sconf = server_configuration(SETTINGS, cert=certs.cert, key=certs.key)
        pair.server = QuicConnection(configuration=sconf,
                                     original_destination_connection_id=pair.client.original_destination_connection_id)
        if adopt == "adopted before its first packet":
            PacedQuicConnection.adopt(pair.server)
        else:
            for data, _addr in pair.client.datagrams_to_send(now=pair.now):
                pair.server.receive_datagram(data, ADDR, now=pair.now)
            PacedQuicConnection.adopt(pair.server)
    pair.exchange(20, 0.0)
    for conn in (pair.client, pair.server):
        conn.send_stream_data(conn.get_next_available_stream_id(is_unidirectional=True), bytes(100), True)
    pair.exchange(20, 0.0)
    assert pair.client._handshake_confirmed and pair.server._handshake_confirmed
    data = [(side, ev[2]) for side, ev in pair.received if isinstance(ev, tuple) and ev[0] == "data"]
    assert sorted(data) == [("client", 100), ("server", 100)]
    assert _held(pair.client) == _held(pair.server) == [True] * 4

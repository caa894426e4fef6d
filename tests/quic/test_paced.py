"""Receiver-paced flow control on raw aioquic: windows grow only by grant(), so a stalled reader blocks the sender."""

from __future__ import annotations

from typing import Any

import pytest
from aioquic.quic import events as qe
from aioquic.quic.connection import QuicConnection

from aqueduct.quic.aioquic_connection import PacedQuicConnection
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.settings import TransportSettings, client_configuration, server_configuration
from aqueduct.quic.tickets import ServerTicketStore

WINDOW = 64 * 1024
SETTINGS = TransportSettings(stream_window=WINDOW, connection_window=4 * WINDOW)
ADDR = ("127.0.0.1", 4433)


class Pair:
    """A client and a server PacedQuicConnection exchanging datagrams in memory, with a fake clock."""

    def __init__(self, certs: DevCerts) -> None:
        self.now = 0.0
        cconf = client_configuration(SETTINGS, server_name="localhost", ca=certs.ca)
        sconf = server_configuration(SETTINGS, cert=certs.cert, key=certs.key)
        store = ServerTicketStore()
        self.client = PacedQuicConnection(configuration=cconf)
        self.server = PacedQuicConnection(
            configuration=sconf,
            original_destination_connection_id=self.client.original_destination_connection_id,
            session_ticket_fetcher=store.fetch,
            session_ticket_handler=store.add,
        )
        self.received: dict[int, int] = {}
        self.reset_seen = False
        self.client.connect(ADDR, now=self.now)

    def run(self, rounds: int = 200) -> None:
        """Exchange packets until both sides are quiet (or `rounds` exchanges)."""
        for _ in range(rounds):
            moved = 0
            for src, dst in ((self.client, self.server), (self.server, self.client)):
                for data, _addr in src.datagrams_to_send(now=self.now):
                    dst.receive_datagram(data, ADDR, now=self.now)
                    moved += 1
            self._drain_events()
            if not moved:
                timer = min(t for t in (self.client.get_timer(), self.server.get_timer()) if t is not None)
                if timer - self.now > 0.05:
                    return
                self.now = timer
                for c in (self.client, self.server):
                    if c.get_timer() is not None and c.get_timer() <= self.now:
                        c.handle_timer(now=self.now)
            self.now += 0.001

    def _drain_events(self) -> None:
        while (ev := self.server.next_event()) is not None:
            if isinstance(ev, qe.StreamDataReceived):
                self.received[ev.stream_id] = self.received.get(ev.stream_id, 0) + len(ev.data)
            elif isinstance(ev, qe.StreamReset):
                self.reset_seen = True
        while self.client.next_event() is not None:
            pass


def test_stalled_reader_blocks_sender(certs: DevCerts) -> None:
    pair = Pair(certs)
    pair.run()
    stream = pair.client.get_next_available_stream_id(is_unidirectional=True)
    pair.client.send_stream_data(stream, b"x" * (8 * WINDOW))
    pair.run()
    # Nothing was granted: exactly one window arrived, however long we wait.
    assert pair.received[stream] == WINDOW
    pair.run()
    assert pair.received[stream] == WINDOW
    # The application consumes half: the window moves by that much, no more.
    pair.server.grant(stream, WINDOW // 2)
    pair.run()
    assert pair.received[stream] == WINDOW + WINDOW // 2


def test_connection_window_is_paced_across_streams(certs: DevCerts) -> None:
    pair = Pair(certs)
    pair.run()
    streams = [pair.client.get_next_available_stream_id(is_unidirectional=True) for _ in range(1)]
    for _ in range(6):
        sid = pair.client.get_next_available_stream_id(is_unidirectional=True)
        pair.client.send_stream_data(sid, b"y" * WINDOW)
        streams.append(sid)
    pair.run()
    used, limit = pair.server.receive_window()
    assert used == limit == 4 * WINDOW
    assert sum(pair.received.values()) == 4 * WINDOW
    for sid, n in list(pair.received.items()):
        pair.server.grant(sid, n)
    pair.run()
    assert sum(pair.received.values()) == 6 * WINDOW


def test_reset_returns_undelivered_bytes_to_the_connection_window(certs: DevCerts) -> None:
    pair = Pair(certs)
    pair.run()
    sid = pair.client.get_next_available_stream_id(is_unidirectional=True)
    pair.client.send_stream_data(sid, b"z" * (WINDOW // 2))
    flight = pair.client.datagrams_to_send(now=pair.now)
    for data, _addr in flight[1:]:  # lose the first packet: the stream has a gap at offset 0
        pair.server.receive_datagram(data, ADDR, now=pair.now)
    pair._drain_events()
    assert pair.received.get(sid, 0) == 0
    before = pair.server.receive_window()[1]
    final_size = pair.client._streams[sid].sender.highest_offset  # what went out before the reset
    assert final_size > 0
    pair.client.reset_stream(sid, 1)
    pair.run()
    assert pair.reset_seen
    # None of the stream reached the application, so aioquic's count of it is credited back at once.
    assert pair.server.receive_window()[1] == before + final_size


def test_only_granted_streams_are_due_and_leave_once_announced(certs: DevCerts) -> None:
    pair = Pair(certs)
    pair.run()
    streams = []
    for _ in range(3):  # three open streams, each holding a full window
        stream = pair.client.get_next_available_stream_id(is_unidirectional=True)
        pair.client.send_stream_data(stream, b"x" * (2 * WINDOW))
        streams.append(stream)
    pair.run()
    assert [pair.received[s] for s in streams] == [WINDOW] * 3
    assert pair.server._limits_due == set()  # no grant: no stream is visited for its limit
    pair.server.grant(streams[1], WINDOW // 2)
    assert pair.server._limits_due == {streams[1]}
    pair.run()
    assert pair.server._limits_due == set()
    assert [pair.received[s] for s in streams] == [WINDOW, WINDOW + WINDOW // 2, WINDOW]


def test_a_lost_window_update_is_announced_again(certs: DevCerts) -> None:
    pair = Pair(certs)
    pair.run()
    stream = pair.client.get_next_available_stream_id(is_unidirectional=True)
    pair.client.send_stream_data(stream, b"x" * (8 * WINDOW))
    pair.run()
    assert pair.received[stream] == WINDOW
    pair.server.grant(stream, WINDOW // 2)
    lost = pair.server.datagrams_to_send(now=pair.now)  # the packet carrying MAX_STREAM_DATA never arrives
    assert lost and pair.server._limits_due == set()
    pair.run()
    assert pair.received[stream] == WINDOW + WINDOW // 2


def test_a_full_packet_takes_no_more_stream_offers(certs: DevCerts, monkeypatch: pytest.MonkeyPatch) -> None:
    """aioquic offers every queued stream a place in every packet; once none fits, the offers cost nothing."""
    pair = Pair(certs)
    pair.run()
    calls = 0
    original = QuicConnection._write_stream_frame

    def counted(self: QuicConnection, *args: Any, **kwargs: Any) -> int:
        nonlocal calls
        calls += 1
        return int(original(self, *args, **kwargs))

    monkeypatch.setattr(QuicConnection, "_write_stream_frame", counted)
    streams = []
    for _ in range(300):  # one-message streams, as unordered sends make them
        stream = pair.client.get_next_available_stream_id(is_unidirectional=True)
        pair.client.send_stream_data(stream, b"m" * 64, end_stream=True)
        streams.append(stream)
    packets = 0
    for _ in range(200):  # the client's packets and the server's acks, until everything arrived
        sent = pair.client.datagrams_to_send(now=pair.now)
        packets += len(sent)
        for data, _addr in sent:
            pair.server.receive_datagram(data, ADDR, now=pair.now)
        for data, _addr in pair.server.datagrams_to_send(now=pair.now):
            pair.client.receive_datagram(data, ADDR, now=pair.now)
        pair.run(rounds=0)
        pair._drain_events()
        pair.now += 0.001
        if all(pair.received.get(s) == 64 for s in streams):
            break
    assert all(pair.received.get(s) == 64 for s in streams) and packets >= 10
    assert calls <= 2 * len(streams)  # (aioquic alone: one per queued stream per packet, ~1,900 here)


def test_spent_handshake_buffers_are_released_and_the_connection_goes_on(certs: DevCerts) -> None:
    """Once the Initial and Handshake levels are discarded their 16 KiB TLS buffers are dropped at both ends,
    and with the Handshake level the 1-RTT one (the server's session ticket went out before), and the
    connection still carries data (session tickets are exercised end to end by the 0-RTT tests)."""
    from aioquic import tls

    from aqueduct.quic.aioquic_connection import SPENT_CRYPTO_BUFFER

    pair = Pair(certs)
    pair.run()
    for conn in (pair.client, pair.server):
        assert conn._handshake_complete
        for epoch in (tls.Epoch.INITIAL, tls.Epoch.HANDSHAKE):
            assert conn._spaces[epoch].discarded
        for epoch in (tls.Epoch.INITIAL, tls.Epoch.HANDSHAKE, tls.Epoch.ONE_RTT):
            assert conn._crypto_buffers[epoch] is SPENT_CRYPTO_BUFFER
    sid = pair.client.get_next_available_stream_id(is_unidirectional=True)
    pair.client.send_stream_data(sid, b"q" * 5000, end_stream=True)
    pair.run()
    assert pair.received[sid] == 5000
    assert SPENT_CRYPTO_BUFFER.data == b""  # nothing was ever written into the shared stand-in


def test_a_client_offers_one_key_share_and_the_server_takes_it(certs: DevCerts) -> None:
    """A client generates one key pair for its ClientHello (secp256r1, the share an aioquic server takes first
    and every TLS 1.3 server must implement), not aioquic's four; the handshake completes on it."""
    pair = Pair(certs)
    hello_keys = (pair.client.tls._ec_private_keys, pair.client.tls._x25519_private_key,
                  pair.client.tls._x448_private_key)
    assert [k.curve.name for k in hello_keys[0]] == ["secp256r1"] and hello_keys[1:] == (None, None)
    pair.run()
    assert pair.client._handshake_complete and pair.server._handshake_complete
    assert pair.server.tls.key_schedule is not None


def test_connections_share_the_frame_handlers_sets_of_levels(certs: DevCerts) -> None:
    """aioquic makes a frozenset per frame type per connection (~7 KiB each end); paced connections, the
    client's and the server's (adopted), point at shared ones and still handle every frame (the handshake)."""
    pairs = [Pair(certs), Pair(certs)]
    server = QuicConnection(configuration=server_configuration(SETTINGS, cert=certs.cert, key=certs.key),
                            original_destination_connection_id=b"12345678")
    PacedQuicConnection.adopt(server)
    from aqueduct.quic.aioquic_connection import FRAME_HANDLERS

    tables = [getattr(c, FRAME_HANDLERS) for p in pairs for c in (p.client, p.server)]
    tables.append(getattr(server, FRAME_HANDLERS))
    for frame_type, (_handler, epochs) in tables[0].items():
        assert all(table[frame_type][1] is epochs for table in tables[1:])
    for p in pairs:
        p.run()
        assert p.client._handshake_complete and p.server._handshake_complete

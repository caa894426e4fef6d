"""Bounds that are not reached through a connection's traffic: issued tickets, admission settings."""

from __future__ import annotations

import datetime

from aioquic.tls import CipherSuite, SessionTicket

from aqueduct.quic.settings import TransportSettings
from aqueduct.quic.tickets import ServerTicketStore


def ticket(n: int) -> SessionTicket:
    now = datetime.datetime.now(datetime.UTC)
    return SessionTicket(age_add=0, cipher_suite=CipherSuite.AES_128_GCM_SHA256,
                         not_valid_after=now + datetime.timedelta(hours=1), not_valid_before=now,
                         resumption_secret=b"s" * 32, server_name="localhost", ticket=n.to_bytes(4, "big"))


def test_server_ticket_store_keeps_at_most_max_tickets_and_drops_the_oldest() -> None:
    store = ServerTicketStore(max_tickets=8)
    for n in range(20):  # one ticket per connection: a client reconnecting forever must not grow the store
        store.add(ticket(n))
    assert len(store) == 8
    assert store.fetch((0).to_bytes(4, "big")) is None
    assert store.fetch((19).to_bytes(4, "big")) is not None


def test_admission_limits_are_on_by_default() -> None:
    s = TransportSettings()
    assert 0 < s.max_connections_per_address <= s.max_connections
    assert s.handshake_timeout > 0

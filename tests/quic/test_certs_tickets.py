"""Dev certificates (CA + separate leaf, fingerprints) and session ticket stores."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from aioquic.tls import CipherSuite, SessionTicket
from cryptography import x509

from aqueduct.quic.certs import DevCerts, fingerprint, normalize_fingerprint
from aqueduct.quic.tickets import FileTicketStore, MemoryTicketStore, ServerTicketStore, server_key


def _ticket(name: str = "localhost", label: bytes = b"t1", hours: int = 1) -> SessionTicket:
    now = datetime.datetime.now(datetime.UTC)
    return SessionTicket(
        age_add=7, cipher_suite=CipherSuite.AES_128_GCM_SHA256, not_valid_after=now + datetime.timedelta(hours=hours),
        not_valid_before=now, resumption_secret=b"s" * 32, server_name=name, ticket=label,
        max_early_data_size=0xFFFFFFFF, other_extensions=[(42, b"x")],
    )


def test_leaf_is_signed_by_ca_and_is_not_a_ca(certs: DevCerts) -> None:
    ca = x509.load_pem_x509_certificate(certs.ca.read_bytes())
    leaf = x509.load_pem_x509_certificate(certs.cert.read_bytes())
    leaf.verify_directly_issued_by(ca)
    assert not leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in san.get_values_for_type(x509.DNSName)
    assert {str(ip) for ip in san.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "::1"}
    assert certs.key.stat().st_mode & 0o077 == 0


def test_fingerprint_forms(certs: DevCerts) -> None:
    fp = fingerprint(certs.cert.read_bytes())
    colon = ":".join(fp[i : i + 2] for i in range(0, 64, 2)).upper()
    assert normalize_fingerprint(colon) == fp == normalize_fingerprint("sha256:" + fp)
    with pytest.raises(ValueError):
        normalize_fingerprint("abc")


def test_memory_store_hands_out_a_ticket_once() -> None:
    store = MemoryTicketStore()
    store.put("localhost@127.0.0.1:4433", _ticket())
    assert store.take("localhost@127.0.0.1:4433") is not None
    assert store.take("localhost@127.0.0.1:4433") is None
    store.put("localhost@127.0.0.1:4433", _ticket(hours=-1))
    assert store.take("localhost@127.0.0.1:4433") is None  # expired


def test_file_store_round_trips_and_survives_garbage(tmp_path: Path) -> None:
    path = tmp_path / "tickets.cbor"
    FileTicketStore(path).put("localhost@127.0.0.1:4433", _ticket())
    got = FileTicketStore(path).take("localhost@127.0.0.1:4433")
    assert got is not None and got.ticket == b"t1" and got.other_extensions == [(42, b"x")]
    assert got.cipher_suite is CipherSuite.AES_128_GCM_SHA256
    assert FileTicketStore(path).take("localhost@127.0.0.1:4433") is None
    path.write_bytes(b"\xff\x00garbage")
    assert FileTicketStore(path).take("localhost@127.0.0.1:4433") is None


def test_tickets_are_kept_per_server_name_and_address() -> None:
    store = MemoryTicketStore()
    a, b = server_key("localhost", "127.0.0.1", 4433), server_key("localhost", "127.0.0.1", 4434)
    assert (a, server_key("localhost", "::1", 4433)) == ("localhost@127.0.0.1:4433", "localhost@[::1]:4433")
    store.put(a, _ticket(label=b"a"))
    store.put(b, _ticket(label=b"b"))
    assert store.take(server_key("localhost", "127.0.0.2", 4433)) is None
    assert getattr(store.take(b), "ticket", None) == b"b" and getattr(store.take(a), "ticket", None) == b"a"


def test_server_store_single_use() -> None:
    multi, single = ServerTicketStore(), ServerTicketStore(single_use=True)
    for store in (multi, single):
        store.add(_ticket())
    assert multi.fetch(b"t1") is not None and multi.fetch(b"t1") is not None
    assert single.fetch(b"t1") is not None and single.fetch(b"t1") is None

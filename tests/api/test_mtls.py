"""Mutual TLS against a live server: a client certificate is requested, verified against `client_ca` and read as
`conn.peer_identity`; a client without one (or with one from another CA) is refused during the handshake with a
clear `AuthenticationFailed`, and nothing of it reaches the application."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import aqueduct
from aqueduct.metrics import Metrics
from aqueduct.quic.certs import DevCerts, fingerprint, make_client_cert, make_dev_certs
from aqueduct.quic.tickets import server_key

from .conftest import guard, running


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> DevCerts:
    return make_dev_certs(tmp_path_factory.mktemp("other-ca"))


@pytest.fixture(scope="module")
def alice(certs: DevCerts) -> tuple[Path, Path]:
    return make_client_cert(certs.ca.parent, "alice")


async def test_a_client_certificate_is_verified_and_named(certs: DevCerts, alice: tuple[Path, Path]) -> None:
    seen: list[aqueduct.Connection] = []

    async def handler(conn: aqueduct.Connection) -> None:
        seen.append(conn)
        async for msg in conn.entrypoint:
            assert msg == "hi"

    async with running(certs, handler, client_ca=certs.ca) as (url, _server):
        async with aqueduct.connect(url, ca=certs.ca, cert=alice[0], key=alice[1]) as conn:
            await conn.entrypoint.send("hi")
            assert conn.peer_identity is not None and conn.peer_identity.subject == "CN=localhost"
        assert len(seen) == 1
        identity = seen[0].peer_identity
        assert identity is not None
        assert identity.subject == "CN=alice" and identity.sans == ("alice",)
        assert identity.fingerprint == fingerprint(alice[0].read_bytes())


async def test_a_client_without_a_certificate_is_refused_in_the_handshake(certs: DevCerts) -> None:
    reached: list[object] = []
    metrics = Metrics()

    async def handler(conn: aqueduct.Connection) -> None:
        reached.append(conn)

    async with running(certs, handler, client_ca=certs.ca, metrics=metrics) as (url, server):
        with pytest.raises(aqueduct.AuthenticationFailed, match="requires a client certificate") as err:
            await guard(aqueduct.connect(url, ca=certs.ca))
        assert err.value.code is not None and err.value.code == 0x100 + 116  # TLS alert certificate_required
        while server.connections:
            await asyncio.sleep(0.01)  # (the refused connection's slot returns once aioquic has ended it)
    assert reached == []
    assert metrics.auth_failures._value.get() == 1


async def test_a_certificate_from_another_ca_is_refused(
    certs: DevCerts, other_ca: DevCerts, tmp_path: Path
) -> None:
    mallory = make_client_cert(other_ca.ca.parent, "mallory")
    reached: list[object] = []

    async def handler(conn: aqueduct.Connection) -> None:
        reached.append(conn)

    async with running(certs, handler, client_ca=certs.ca) as (url, _server):
        with pytest.raises(aqueduct.AuthenticationFailed, match="did not accept our client certificate"):
            await guard(aqueduct.connect(url, ca=certs.ca, cert=mallory[0], key=mallory[1]))
        # the server's own certificate is no client certificate (no clientAuth usage)
        with pytest.raises(aqueduct.AuthenticationFailed, match="bad_certificate"):
            await guard(aqueduct.connect(url, ca=certs.ca, cert=certs.cert, key=certs.key))
    assert reached == []


async def test_optional_client_certificates(certs: DevCerts, alice: tuple[Path, Path]) -> None:
    identities: list[object] = []

    async def handler(conn: aqueduct.Connection) -> None:
        identities.append(conn.peer_identity)
        await conn.wait_closed()

    async with running(certs, handler, client_ca=certs.ca, require_client_cert=False) as (url, _server):
        async with aqueduct.connect(url, ca=certs.ca):
            pass
        async with aqueduct.connect(url, ca=certs.ca, cert=alice[0], key=alice[1]):
            pass
    assert identities[0] is None
    assert getattr(identities[1], "subject", None) == "CN=alice"


async def test_a_server_verifying_clients_issues_no_tickets(certs: DevCerts, alice: tuple[Path, Path]) -> None:
    """A resumed session would show no certificate: every connection proves itself anew (no 0-RTT)."""
    store = aqueduct.MemoryTicketStore()

    async def handler(conn: aqueduct.Connection) -> None:
        await conn.wait_closed()

    async with running(certs, handler, client_ca=certs.ca) as (url, server):
        for _ in range(2):
            async with aqueduct.connect(url, ca=certs.ca, cert=alice[0], key=alice[1], session_ticket_store=store):
                pass
    assert store.take(server_key("127.0.0.1", "127.0.0.1", server.address[1])) is None


@pytest.mark.parametrize("which", ["client_ca", "cert"])
async def test_unusable_files_fail_before_the_network(certs: DevCerts, tmp_path: Path, which: str) -> None:
    missing = tmp_path / "missing.pem"
    with pytest.raises(aqueduct.ConfigError, match=r"missing\.pem"):
        if which == "client_ca":
            async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, client_ca=missing):
                pass
        else:
            await aqueduct.connect("aqueduct://127.0.0.1:9", ca=certs.ca, cert=missing, key=certs.key)

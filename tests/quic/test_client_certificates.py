"""Client certificates as the `openssl` command line makes them, against a live mutual-TLS server.

Tutorials and most PKIs outside this project make client certificates with `openssl req -new` and
`openssl x509 -req -CA`: version 1, no extensions at all (no subjectAltName, no key identifiers, no key
usage); Kubernetes and PostgreSQL name clients by the subject CN only. Every RFC 5280-valid chain to
`client_ca` is accepted (quic/mtls.py) and `peer_identity.name` is the first subjectAltName, else the CN.
What must stay refused stays refused: another CA, an expired certificate, a serverAuth-only or
signing-less key usage, a certificate issued by a leaf (v1 or v3), a self-signed certificate.

Every certificate here is made by the real `openssl` binary (but the expired one: openssl 3.0's
`x509 -req` cannot backdate), and every check runs over a real QUIC connection.
"""

from __future__ import annotations

import datetime
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization

import aqueduct
from aqueduct.quic.certs import DevCerts, make_dev_certs
from aqueduct.quic.mtls import ClientAuth
from tests.api.conftest import guard, running

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command line")

Issue = Callable[..., tuple[Path, Path]]


def _openssl(*args: str | Path, cwd: Path) -> None:
    subprocess.run(["openssl", *map(str, args)], cwd=cwd, check=True, capture_output=True)


def _make_ca(directory: Path, name: str, issuer: Path | None = None) -> Path:
    """A CA made as `openssl req -x509` makes one (v3, CA:TRUE, key identifiers); with `issuer`, an intermediate."""
    directory.mkdir(parents=True, exist_ok=True)
    key, pem = directory / f"{name}.key", directory / f"{name}.pem"
    if issuer is None:
        _openssl("req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", key, "-out", pem, "-subj", f"/CN={name}", "-days", "30", cwd=directory)
    else:
        ext = directory / f"{name}.ext"
        ext.write_text("basicConstraints=critical,CA:TRUE\nkeyUsage=keyCertSign\n")
        _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", key, "-out", directory / f"{name}.csr", "-subj", f"/CN={name}", cwd=directory)
        _openssl("x509", "-req", "-in", directory / f"{name}.csr", "-CA", issuer, "-CAkey", issuer.with_suffix(".key"),
                 "-CAcreateserial", "-out", pem, "-days", "30", "-extfile", ext, cwd=directory)
    return pem


def _issue(ca: Path, name: str, *, extensions: str | None = None, rsa: bool = False,
           chain: tuple[Path, ...] = ()) -> tuple[Path, Path]:
    """A client certificate the tutorial way: `openssl req -new`, then `openssl x509 -req -CA` (v1 without
    `extensions`, else v3 with exactly those extension lines). Its file holds the leaf, then `chain`."""
    directory = ca.parent
    key, csr, pem = directory / f"{name}.key", directory / f"{name}.csr", directory / f"{name}.pem"
    newkey = ["-newkey", "rsa:2048"] if rsa else ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
    _openssl("req", "-new", *newkey, "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={name}", cwd=directory)
    ext: list[str | Path] = []
    if extensions is not None:
        (directory / f"{name}.ext").write_text(extensions)
        ext = ["-extfile", directory / f"{name}.ext"]
    _openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca.with_suffix(".key"), "-CAcreateserial",
             "-out", pem, "-days", "30", *ext, cwd=directory)
    pem.write_bytes(pem.read_bytes() + b"".join(c.read_bytes() for c in chain))
    return pem, key


@pytest.fixture(scope="module")
def client_ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _make_ca(tmp_path_factory.mktemp("openssl-ca"), "clients-ca")


async def _served_name(certs: DevCerts, client_ca: Path, cert: tuple[Path, Path],
                       **serve_kw: Any) -> aqueduct.PeerIdentity:
    """Connect with `cert` to a server verifying clients against `client_ca` (and served with `serve_kw`); the
    identity the server saw."""
    seen: list[aqueduct.PeerIdentity | None] = []

    async def handler(conn: aqueduct.Connection) -> None:
        seen.append(conn.peer_identity)
        async for msg in conn.entrypoint:
            assert msg == "hi"

    async with running(certs, handler, client_ca=client_ca, **serve_kw) as (url, _server):
        async with await guard(aqueduct.connect(url, ca=certs.ca, cert=cert[0], key=cert[1])) as conn:
            await conn.entrypoint.send("hi")
    assert len(seen) == 1 and seen[0] is not None
    return seen[0]


async def _refused(certs: DevCerts, client_ca: Path, cert: tuple[Path, Path], why: str) -> None:
    """The handshake fails with bad_certificate for reason `why` (the server's reason, a regex), and the
    application never sees the connection."""
    reached: list[object] = []

    async def handler(conn: aqueduct.Connection) -> None:
        reached.append(conn)

    async with running(certs, handler, client_ca=client_ca) as (url, _server):
        with pytest.raises(aqueduct.AuthenticationFailed, match="did not accept our client certificate") as err:
            await guard(aqueduct.connect(url, ca=certs.ca, cert=cert[0], key=cert[1]))
    assert err.value.code == 0x100 + 42  # CRYPTO_ERROR + TLS alert bad_certificate
    assert re.search(why, str(err.value)), str(err.value)
    assert reached == []


async def test_a_version_1_certificate_without_extensions_is_accepted(certs: DevCerts, client_ca: Path) -> None:
    alice = _issue(client_ca, "alice", rsa=True)
    assert x509.load_pem_x509_certificate(alice[0].read_bytes()).version is x509.Version.v1
    identity = await _served_name(certs, client_ca, alice)
    assert identity.name == "alice" and identity.subject == "CN=alice" and identity.sans == ()


async def test_a_cn_only_version_3_certificate_is_accepted(certs: DevCerts, client_ca: Path) -> None:
    bob = _issue(client_ca, "bob", extensions="basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n"
                                               "extendedKeyUsage=clientAuth\n")
    assert x509.load_pem_x509_certificate(bob[0].read_bytes()).version is x509.Version.v3
    identity = await _served_name(certs, client_ca, bob)
    assert identity.name == "bob" and identity.sans == ()


async def test_the_name_is_the_subject_alternative_name_when_there_is_one(certs: DevCerts, client_ca: Path) -> None:
    carol = _issue(client_ca, "carol", extensions="subjectAltName=DNS:carol.example,DNS:c2.example\n")
    identity = await _served_name(certs, client_ca, carol)
    assert identity.name == "carol.example" and identity.sans == ("carol.example", "c2.example")


async def test_a_chain_through_an_intermediate_is_accepted(certs: DevCerts, client_ca: Path) -> None:
    intermediate = _make_ca(client_ca.parent / "sub", "team-ca", issuer=client_ca)
    dave = _issue(intermediate, "dave", chain=(intermediate,))
    assert (await _served_name(certs, client_ca, dave)).name == "dave"


async def test_a_certificate_of_another_ca_is_refused(certs: DevCerts, client_ca: Path, tmp_path: Path) -> None:
    other = _make_ca(tmp_path, "other-ca")
    await _refused(certs, client_ca, _issue(other, "mallory"), "unable to get local issuer certificate")


async def test_a_self_signed_certificate_is_refused(certs: DevCerts, client_ca: Path, tmp_path: Path) -> None:
    await _refused(certs, client_ca, (_make_ca(tmp_path, "mallory"), tmp_path / "mallory.key"), "self-signed")


@pytest.mark.parametrize(("name", "extensions", "why"), [
    ("server-only", "extendedKeyUsage=serverAuth\n", "not for TLS clients"),
    ("mail-and-code", "basicConstraints=CA:FALSE\nextendedKeyUsage=emailProtection,codeSigning\n",
     "not for TLS clients"),
    ("cannot-sign", "keyUsage=keyEncipherment\n", "does not allow digitalSignature"),  # no CertificateVerify
])
async def test_a_certificate_not_meant_for_tls_clients_is_refused(
    certs: DevCerts, client_ca: Path, name: str, extensions: str, why: str
) -> None:
    await _refused(certs, client_ca, _issue(client_ca, name, extensions=extensions), why)


@pytest.mark.parametrize("leaf_extensions", [None, "basicConstraints=CA:FALSE\n"])
async def test_a_leaf_cannot_issue_certificates(
    certs: DevCerts, client_ca: Path, tmp_path: Path, leaf_extensions: str | None
) -> None:
    """A v1 leaf (no basicConstraints) or a CA:FALSE leaf of the right CA signs a certificate: refused."""
    alice = _issue(client_ca, f"leaf{0 if leaf_extensions is None else 3}", extensions=leaf_extensions)
    pseudo_ca = tmp_path / "pseudo.pem"
    pseudo_ca.write_bytes(alice[0].read_bytes())
    pseudo_ca.with_suffix(".key").write_bytes(alice[1].read_bytes())
    mallory = _issue(pseudo_ca, "mallory", chain=(alice[0],))
    await _refused(certs, client_ca, mallory, "invalid CA certificate")


async def test_an_expired_certificate_is_refused(certs: DevCerts, client_ca: Path, tmp_path: Path) -> None:
    alice = _issue(client_ca, "old-alice")
    ca_key = serialization.load_pem_private_key(client_ca.with_suffix(".key").read_bytes(), password=None)
    ca = x509.load_pem_x509_certificate(client_ca.read_bytes())
    leaf = x509.load_pem_x509_certificate(alice[0].read_bytes())
    now = datetime.datetime.now(datetime.UTC)
    expired = (
        x509.CertificateBuilder().subject_name(leaf.subject).issuer_name(ca.subject).public_key(leaf.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=3)).not_valid_after(now - datetime.timedelta(days=1))
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    pem = tmp_path / "expired.pem"
    pem.write_bytes(expired.public_bytes(serialization.Encoding.PEM))
    await _refused(certs, client_ca, (pem, alice[1]), "certificate has expired")


async def test_a_ca_certificate_is_refused_as_a_client_leaf(certs: DevCerts, client_ca: Path) -> None:
    """A CA:TRUE certificate of the right CA (or the CA itself, whose key a client may hold) logs no one in."""
    sub = _issue(client_ca, "sub-ca", extensions="basicConstraints=critical,CA:TRUE\n"
                                                 "keyUsage=digitalSignature,keyCertSign\n")
    await _refused(certs, client_ca, sub, "is a CA certificate")
    await _refused(certs, client_ca, (client_ca, client_ca.with_suffix(".key")), "is a CA certificate")
    auth = ClientAuth.load(client_ca, allow_ca_leaf=True)  # (configured: accepted)
    auth.verify(x509.load_pem_x509_certificate(sub[0].read_bytes()), [])
    assert (await _served_name(certs, client_ca, sub, allow_ca_client_cert=True)).name == "sub-ca"


async def test_allowing_ca_client_certificates_needs_a_client_ca(certs: DevCerts) -> None:
    with pytest.raises(aqueduct.ConfigError, match="allow_ca_client_cert=True needs client_ca"):
        async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, allow_ca_client_cert=True):
            pass


def test_the_dev_ca_takes_an_intermediate(tmp_path: Path) -> None:
    """`aqueduct cert`'s CA has no pathlen:0, so a user can put an intermediate CA under it."""
    dev = make_dev_certs(tmp_path)
    assert dev.ca.with_suffix(".key") == dev.ca_key  # (what `_make_ca` signs with)
    team = _make_ca(tmp_path / "team", "team-ca", issuer=dev.ca)
    leaf = _issue(team, "erin", chain=(team,))
    auth = ClientAuth.load(dev.ca)
    certs_in = x509.load_pem_x509_certificates(leaf[0].read_bytes())
    auth.verify(certs_in[0], certs_in[1:])

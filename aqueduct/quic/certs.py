"""Development certificates: a self-signed CA and a separate leaf for loopback names.

`make_dev_certs(dir)` writes ca.pem, ca.key, cert.pem and key.pem. The leaf
is signed by the CA and names 127.0.0.1, ::1 and localhost; it is never a CA
itself (some TLS stacks refuse a self-signed CA used as a server cert).
`make_client_cert(dir, name)` signs a client certificate (clientAuth, the name
as subject CN and DNS SAN) with that CA, for mutual TLS (quic/mtls.py).
`fingerprint(pem)` gives the SHA-256 of a certificate's DER, for pinning.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEV_NAMES = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class DevCerts:
    """Paths of a generated development CA and server certificate."""

    ca: Path
    ca_key: Path
    cert: Path
    key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _san(names: tuple[str, ...]) -> x509.SubjectAlternativeName:
    entries: list[x509.GeneralName] = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(entries)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    pkcs8 = serialization.PrivateFormat.PKCS8
    return key.private_bytes(serialization.Encoding.PEM, pkcs8, serialization.NoEncryption())


def make_dev_certs(directory: str | Path, names: tuple[str, ...] = DEV_NAMES, days: int = 365) -> DevCerts:
    """Create a dev CA and a leaf certificate for `names` in `directory` (created if missing)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("aqueduct dev CA"))
        .issuer_name(_name("aqueduct dev CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)  # (room for intermediates)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name(names[0]))
        .issuer_name(ca_cert.subject)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_san(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = DevCerts(ca=out / "ca.pem", ca_key=out / "ca.key", cert=out / "cert.pem", key=out / "key.pem")
    paths.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths.ca_key.write_bytes(_pem_key(ca_key))
    paths.cert.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths.key.write_bytes(_pem_key(leaf_key))
    for secret in (paths.ca_key, paths.key):
        secret.chmod(0o600)
    return paths


def make_client_cert(directory: str | Path, name: str, days: int = 365) -> tuple[Path, Path]:
    """Sign a client certificate for `name` with the dev CA in `directory`; write NAME.pem and NAME.key there."""
    out = Path(directory)
    ca_cert = x509.load_pem_x509_certificate((out / "ca.pem").read_bytes())
    ca_key = serialization.load_pem_private_key((out / "ca.key").read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    now = datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_path, key_path = out / f"{name}.pem", out / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(_pem_key(key))
    key_path.chmod(0o600)
    return cert_path, key_path


def fingerprint(cert: bytes | x509.Certificate) -> str:
    """SHA-256 fingerprint (lowercase hex) of a certificate given as PEM bytes or a parsed certificate."""
    parsed = x509.load_pem_x509_certificate(cert) if isinstance(cert, bytes) else cert
    return hashlib.sha256(parsed.public_bytes(serialization.Encoding.DER)).hexdigest()


def normalize_fingerprint(value: str) -> str:
    """Accept `AA:BB:..`, `aabb..` or `sha256:aabb..`; return lowercase hex without separators."""
    text = value.lower().removeprefix("sha256:").replace(":", "").strip()
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise ValueError(f"not a SHA-256 fingerprint: {value!r}")
    return text

"""A certificate a browser accepts by hash: what `new WebTransport(url, {serverCertificateHashes})` requires.

A page may trust a server's certificate without any CA when it names the certificate's SHA-256 in
`serverCertificateHashes`; browsers then demand (W3C WebTransport, "custom certificate requirements") an X.509v3
certificate with an ECDSA P-256 key (Chromium also takes no RSA here) whose validity period is at most two weeks.
`make_browser_cert(dir)` writes such a self-signed certificate (cert.pem, key.pem) for loopback names and returns
its paths and hash (`sha256`, or `hex` for a page to decode); the browser example and tests use it.
"""

from __future__ import annotations

import datetime
import hashlib
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from ..errors import ConfigError
from .certs import DEV_NAMES, _name, _pem_key, _san

MAX_DAYS = 14
"""The longest validity a browser accepts for a certificate trusted by hash."""
BROWSER_NAMES = DEV_NAMES


@dataclass(frozen=True)
class BrowserCert:
    """A hash-trusted certificate: its files and the SHA-256 of its DER."""

    cert: Path
    key: Path
    sha256: bytes

    @property
    def hex(self) -> str:
        """The SHA-256 as lowercase hex (for a page's `serverCertificateHashes`, decoded there to bytes)."""
        return self.sha256.hex()


def make_browser_cert(directory: str | Path, names: tuple[str, ...] = BROWSER_NAMES, days: int = 13) -> BrowserCert:
    """Write a self-signed ECDSA P-256 certificate valid from an hour ago for `days` (at most MAX_DAYS in all)."""
    if not 0 < days < MAX_DAYS:
        raise ConfigError(f"a certificate trusted by hash must be valid for less than {MAX_DAYS} days, not {days}")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = _name(names[0])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now - datetime.timedelta(hours=1) + datetime.timedelta(days=days))
        .add_extension(_san(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = out / "cert.pem", out / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(_pem_key(key))
    key_path.chmod(0o600)
    return BrowserCert(cert_path, key_path, hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).digest())

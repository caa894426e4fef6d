"""Mutual TLS: a server asks for, verifies and reads the client's certificate (what aioquic lacks).

aioquic's TLS code can send a CertificateRequest only behind a test-only flag
(`Context._request_client_certificate`), checks only the signature of the
client's CertificateVerify (key possession, not who issued the certificate),
accepts an empty Certificate as "no client authentication", and offers no
API to read the certificate. `aioquic_tls.require_client_certificates(tls, auth)` turns
one connection's TLS context into a `ClientVerifyingContext` (aioquic_tls.py: the door to aioquic's private
TLS state, which this module's policy is hooked into), which:

- sends a CertificateRequest in every full handshake;
- refuses an empty Certificate with the `certificate_required` alert when
  `auth.required` (else the connection goes on without a client identity);
- after aioquic checked the CertificateVerify signature, verifies the chain
  against `auth`'s CA file with OpenSSL's verifier (through pyOpenSSL, as
  aioquic verifies servers): RFC 5280 path validation (validity dates,
  signatures up to a certificate of the file, every issuer a CA), so version
  1 certificates and certificates without subjectAltName or key identifiers
  (what `openssl x509 -req -CA` makes) pass, as they do with nginx or
  Python's `ssl`. Then the use: every certificate of the verified chain that
  restricts its extended key usage must allow clientAuth (or any use), and a
  leaf that states its key usage must allow digitalSignature (RFC 8446
  4.4.2.2: the key signs CertificateVerify), and a leaf may not be a CA
  (basicConstraints CA:TRUE: a CA's key signs certificates, it does not log
  in; OpenSSL accepts one, and a CA of the file presented as a client would
  pass) unless `ClientAuth.allow_ca_leaf`. Failure is the
  `bad_certificate` alert;
- refuses to finish a handshake that requires a certificate but has none
  (a resumed session would skip the request: servers that authenticate
  clients by certificate issue no session tickets, see endpoint.py).

An alert closes the QUIC connection during the handshake (CRYPTO_ERROR +
alert): the server never reports HandshakeCompleted, so the engine's
handshake gate (core/startup.py) holds every byte of the client until it
is discarded; nothing of it reaches the application. `PeerIdentity.of`
reads a certificate as the application sees it (`conn.peer_identity`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aioquic import tls
from aioquic.quic.packet import QuicErrorCode
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from OpenSSL import crypto

from .aioquic_tls import peer_certificate
from .certs import fingerprint
from .credentials import check_ca_file


@dataclass(frozen=True)
class PeerIdentity:
    """Who the peer's certificate says it is (verified against the CA it was checked with)."""

    subject: str
    """The certificate's subject as an RFC 4514 string, e.g. `CN=alice`."""
    sans: tuple[str, ...]
    """Its subject alternative names (DNS names, IP addresses, URIs, e-mail addresses) as text."""
    fingerprint: str
    """SHA-256 of the certificate's DER, lowercase hex (as `aqueduct cert` prints it)."""
    name: str
    """The peer's name: its first subject alternative name, else its subject's common name (CN-only and
    version 1 certificates), else the whole subject string."""

    @classmethod
    def of(cls, cert: x509.Certificate) -> PeerIdentity:
        """The identity of a parsed certificate."""
        try:
            ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            sans = tuple(str(getattr(name, "value", name)) for name in ext)
        except x509.ExtensionNotFound:
            sans = ()
        subject = cert.subject.rfc4514_string()
        common_names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        name = sans[0] if sans else str(common_names[0].value) if common_names else subject
        return cls(subject, sans, fingerprint(cert), name)


@dataclass(frozen=True)
class ClientAuth:
    """A server's client-certificate policy: the CA file clients are verified against, and whether one is required."""

    ca_file: Path
    roots: tuple[x509.Certificate, ...]
    required: bool = True
    allow_ca_leaf: bool = False
    """Accept a client certificate that is itself a CA (basicConstraints CA:TRUE); refused by default."""

    @classmethod
    def load(cls, ca_file: str | Path, *, required: bool = True, allow_ca_leaf: bool = False) -> ClientAuth:
        """Read the CA file now (ConfigError naming it if it is missing or holds no certificate)."""
        check_ca_file(ca_file)
        roots = tuple(x509.load_pem_x509_certificates(Path(ca_file).read_bytes()))
        return cls(Path(ca_file), roots, required, allow_ca_leaf)

    @functools.cached_property
    def _store(self) -> crypto.X509Store:
        """The CA file's certificates as OpenSSL trust anchors (any of them, root or not: PARTIAL_CHAIN)."""
        store = crypto.X509Store()
        for root in self.roots:
            store.add_cert(crypto.X509.from_cryptography(root))
        store.set_flags(crypto.X509StoreFlags.PARTIAL_CHAIN)
        return store

    def verify(self, leaf: x509.Certificate, chain: list[x509.Certificate]) -> None:
        """Raise the bad_certificate alert unless `leaf` (with `chain`) leads to the CA file for a TLS client."""
        context = crypto.X509StoreContext(
            self._store, crypto.X509.from_cryptography(leaf), [crypto.X509.from_cryptography(c) for c in chain]
        )
        try:
            verified = [c.to_cryptography() for c in context.get_verified_chain()]
        except crypto.X509StoreContextError as exc:
            raise tls.AlertBadCertificate(f"client certificate not accepted: {exc}") from None
        refusal = _client_use_refusal(verified)
        if refusal is None and not self.allow_ca_leaf and _is_ca(verified[0]):
            refusal = f"{verified[0].subject.rfc4514_string()} is a CA certificate (CA:TRUE), not a client's"
        if refusal is not None:
            raise tls.AlertBadCertificate(f"client certificate not accepted: {refusal}")


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


_CLIENT_USES = {ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE}


def _client_use_refusal(verified: list[x509.Certificate]) -> str | None:
    """Why a verified chain (leaf first) may not authenticate a TLS client, or None if it may."""
    for cert in verified:
        try:
            uses = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        except x509.ExtensionNotFound:
            continue
        if not _CLIENT_USES & set(uses):
            return f"{cert.subject.rfc4514_string()} is not for TLS clients (extended key usage without clientAuth)"
    try:
        usage = verified[0].extensions.get_extension_for_class(x509.KeyUsage).value
    except x509.ExtensionNotFound:
        return None
    return None if usage.digital_signature else "its key usage does not allow digitalSignature"


CERTIFICATE_ALERTS = {
    tls.AlertDescription.certificate_required: "the server requires a client certificate: pass cert= and key=",
    tls.AlertDescription.bad_certificate: "the server did not accept our client certificate",
    tls.AlertDescription.unknown_ca: "the server does not know our client certificate's CA",
    tls.AlertDescription.certificate_expired: "the server found our client certificate expired",
    tls.AlertDescription.unsupported_certificate: "the server cannot use our client certificate",
}
"""TLS alerts a server sends when it refuses a client certificate, as the client is told of them."""


def certificate_refusal(error_code: int) -> str | None:
    """What a QUIC close code says if it is one of those alerts (CRYPTO_ERROR + alert), else None."""
    alert = error_code - QuicErrorCode.CRYPTO_ERROR
    for description, why in CERTIFICATE_ALERTS.items():
        if alert == description:
            return f"{why}: TLS alert {description.name}"
    return None


def peer_identity(context: tls.Context | None) -> PeerIdentity | None:
    """The identity of the certificate the peer presented in this handshake (None: none, or a resumed session)."""
    cert = peer_certificate(context)
    return PeerIdentity.of(cert) if cert is not None else None


def handshake_identity(protocol: Any) -> PeerIdentity | None:
    """The verified certificate of an AqueductProtocol's peer, once its handshake passed every check (else None)."""
    done = protocol.handshake
    if not done.done() or done.cancelled() or done.exception() is not None:
        return None
    return peer_identity(getattr(protocol.quic, "tls", None))

"""aioquic's TLS context where it is private: asking for a client certificate, and reading the peer's.

One of the doors to aioquic's private state (ARCHITECTURE.md; tests/architecture/test_aioquic_stays_in_quic.py).
aioquic sends a CertificateRequest only behind a test-only flag (`Context._request_client_certificate`), keeps
the peer's certificate and chain in private attributes, and hands a server's Certificate, CertificateVerify and
Finished messages to private methods. The policy (which CA, which uses, whether a certificate is required) is
mtls.py's; this module only hooks it in:

- `require_client_certificates(context, verifier)` turns one connection's fresh server context into a
  `ClientVerifyingContext`, which sends a CertificateRequest in every full handshake, refuses an empty
  Certificate (or a Finished without one) with the `certificate_required` alert when `verifier.required`, and
  once aioquic checked the CertificateVerify signature (the client holds the key) calls
  `verifier.verify(leaf, chain)`, which raises a TLS alert to refuse it;
- `peer_certificate(context)` is the certificate the peer presented in this handshake (None: none, or a
  resumed session).
"""

from __future__ import annotations

from typing import Any, Protocol

from aioquic import tls
from aioquic._buffer import Buffer
from cryptography import x509


class CertificateVerifier(Protocol):
    """What decides on a client's certificate (mtls.py's `ClientAuth`)."""

    @property
    def required(self) -> bool:
        """Whether a client without a certificate is refused."""
        ...

    def verify(self, leaf: x509.Certificate, chain: list[x509.Certificate]) -> None:
        """Raise a TLS alert unless `leaf` (with `chain`) may authenticate a client."""
        ...


class AlertCertificateRequired(tls.Alert):
    """TLS alert 116: the server requires a client certificate and none was sent."""

    description = tls.AlertDescription.certificate_required


class ClientVerifyingContext(tls.Context):
    """aioquic's server TLS context that requests, verifies and requires client certificates (see module doc)."""

    client_auth: CertificateVerifier

    def _server_handle_certificate(self, input_buf: Buffer) -> None:
        super()._server_handle_certificate(input_buf)
        if self._peer_certificate is None and self.client_auth.required:
            raise AlertCertificateRequired("a client certificate is required")

    def _server_handle_certificate_verify(self, input_buf: Buffer) -> None:
        super()._server_handle_certificate_verify(input_buf)  # the client holds the certificate's key
        assert self._peer_certificate is not None
        self.client_auth.verify(self._peer_certificate, self._peer_certificate_chain)

    def _server_handle_finished(self, input_buf: Buffer, output_buf: Buffer) -> None:
        if self._peer_certificate is None and self.client_auth.required:
            raise AlertCertificateRequired("a client certificate is required")
        super()._server_handle_finished(input_buf, output_buf)


def require_client_certificates(context: tls.Context, verifier: CertificateVerifier) -> None:
    """Make a server's fresh TLS context request and verify client certificates with `verifier`."""
    context.__class__ = ClientVerifyingContext
    assert isinstance(context, ClientVerifyingContext)
    context.client_auth = verifier
    context._request_client_certificate = True


def peer_certificate(context: Any) -> x509.Certificate | None:
    """The certificate the peer presented in this handshake (None: none, a resumed session, or no context)."""
    cert = getattr(context, "_peer_certificate", None)
    return cert if isinstance(cert, x509.Certificate) else None

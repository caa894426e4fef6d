"""The CA, certificate and key files of a TLS configuration, checked before any network step.

aioquic stores a client's CA path and reads it only while the handshake runs, so a
missing or malformed CA file used to surface as a failed handshake (after a timeout)
far from its cause. Every file a configuration names is read here first; a problem
raises `ConfigError` naming the file and what is wrong with it, and nothing is sent.
"""

from __future__ import annotations

from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from ..errors import ConfigError


def _read(path: str | Path, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{what} file {path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{what} file {path}: is a directory") from None
    except OSError as exc:
        raise ConfigError(f"{what} file {path}: cannot be read ({exc.strerror or exc})") from None


def check_ca_file(path: str | Path) -> None:
    """The CA file exists, is readable and holds at least one PEM certificate."""
    try:
        x509.load_pem_x509_certificates(_read(path, "CA"))
    except ValueError:
        raise ConfigError(f"CA file {path}: no PEM certificate in it") from None


def check_cert_and_key(cert: str | Path, key: str | Path) -> None:
    """The certificate file holds a PEM certificate chain and the key file an unencrypted PEM private key."""
    try:
        x509.load_pem_x509_certificates(_read(cert, "certificate"))
    except ValueError:
        raise ConfigError(f"certificate file {cert}: no PEM certificate in it") from None
    try:
        load_pem_private_key(_read(key, "key"), password=None)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"key file {key}: not an unencrypted PEM private key ({exc})") from None

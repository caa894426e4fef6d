"""The CA, certificate and key files of a TLS configuration, checked before any network step, and read once.

aioquic stores a client's CA path and reads it only while the handshake runs, so a
missing or malformed CA file used to surface as a failed handshake (after a timeout)
far from its cause. Every file a configuration names is read here first; a problem
raises `ConfigError` naming the file and what is wrong with it, and nothing is sent.

What a file held is kept per path and (modification time, size): a client connecting
again to the same servers, or with the same client certificate, neither reads nor
parses its files again (a CA check and a certificate chain with its key cost a few
hundred microseconds of parsing per connect); a file replaced on disk (a renewed
certificate, a new CA) is read afresh at the next connect. Only what was read
successfully is kept (`functools.lru_cache` keeps no exceptions), at most
CACHED_FILES sets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from ..errors import ConfigError

CACHED_FILES = 64
"""CA files, and certificate/key pairs, whose contents are kept (the least recently used go first)."""

Stamp = tuple[str, int, int]
"""A file as last seen: (path, modification time in ns, size)."""


@dataclass(frozen=True)
class CertAndKey:
    """A certificate chain (the leaf first) and its private key, parsed."""

    certificate: x509.Certificate
    chain: tuple[x509.Certificate, ...]
    private_key: PrivateKeyTypes


def _stamp(path: str | Path, what: str) -> Stamp:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ConfigError(f"{what} file {path}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"{what} file {path}: cannot be read ({exc.strerror or exc})") from None
    return str(path), st.st_mtime_ns, st.st_size


def _read(path: str | Path, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{what} file {path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{what} file {path}: is a directory") from None
    except OSError as exc:
        raise ConfigError(f"{what} file {path}: cannot be read ({exc.strerror or exc})") from None


@lru_cache(maxsize=CACHED_FILES)
def _ca_certificates(stamp: Stamp) -> tuple[x509.Certificate, ...]:
    path = stamp[0]
    try:
        return tuple(x509.load_pem_x509_certificates(_read(path, "CA")))
    except ValueError:
        raise ConfigError(f"CA file {path}: no PEM certificate in it") from None


@lru_cache(maxsize=CACHED_FILES)
def _cert_and_key(cert_stamp: Stamp, key_stamp: Stamp) -> CertAndKey:
    cert, key = cert_stamp[0], key_stamp[0]
    try:
        certificates = x509.load_pem_x509_certificates(_read(cert, "certificate"))
    except ValueError:
        raise ConfigError(f"certificate file {cert}: no PEM certificate in it") from None
    try:
        private_key = load_pem_private_key(_read(key, "key"), password=None)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"key file {key}: not an unencrypted PEM private key ({exc})") from None
    return CertAndKey(certificates[0], tuple(certificates[1:]), private_key)


def check_ca_file(path: str | Path) -> None:
    """The CA file exists, is readable and holds at least one PEM certificate."""
    _ca_certificates(_stamp(path, "CA"))


def load_cert_and_key(cert: str | Path, key: str | Path) -> CertAndKey:
    """The certificate chain (PEM) and unencrypted PEM private key in these files (ConfigError if unusable)."""
    return _cert_and_key(_stamp(cert, "certificate"), _stamp(key, "key"))


def check_cert_and_key(cert: str | Path, key: str | Path) -> None:
    """The certificate file holds a PEM certificate chain and the key file an unencrypted PEM private key."""
    load_cert_and_key(cert, key)

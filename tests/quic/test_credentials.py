"""TLS files are read once per path and version: a connect to the same servers neither reads nor parses its CA,
certificate or key again, and a file replaced on disk is read afresh (and checked afresh)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from aqueduct.errors import ConfigError
from aqueduct.quic import credentials
from aqueduct.quic.certs import DevCerts, make_dev_certs
from aqueduct.quic.settings import TransportSettings, client_configuration, server_configuration


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files credentials.py reads from now on (by path)."""
    seen: list[str] = []
    read = credentials._read

    def counting(path: str | Path, what: str) -> bytes:
        seen.append(str(path))
        return read(path, what)

    monkeypatch.setattr(credentials, "_read", counting)
    credentials._ca_certificates.cache_clear()
    credentials._cert_and_key.cache_clear()
    return seen


def _bump(path: Path, seconds: int) -> None:
    """Give `path` a modification time `seconds` later than it has (a rewrite need not change the size)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 1_000_000_000))


def test_a_ca_file_is_read_once_until_it_changes(tmp_path: Path, certs: DevCerts, reads: list[str]) -> None:
    ca = tmp_path / "ca.pem"
    shutil.copy(certs.ca, ca)
    for _ in range(3):
        client_configuration(TransportSettings(), server_name="localhost", ca=ca)
    assert reads == [str(ca)]
    ca.write_bytes(b"x" * ca.stat().st_size)  # garbage of the same size, written later
    _bump(ca, 1)
    with pytest.raises(ConfigError, match="no PEM certificate"):
        client_configuration(TransportSettings(), server_name="localhost", ca=ca)
    with pytest.raises(ConfigError, match="no PEM certificate"):  # (a failure is not kept: read again)
        client_configuration(TransportSettings(), server_name="localhost", ca=ca)
    shutil.copy(certs.ca, ca)
    _bump(ca, 2)
    client_configuration(TransportSettings(), server_name="localhost", ca=ca)
    assert reads == [str(ca)] * 4
    ca.unlink()
    with pytest.raises(ConfigError, match="no such file"):
        client_configuration(TransportSettings(), server_name="localhost", ca=ca)


def test_a_certificate_and_key_are_parsed_once_and_again_when_replaced(tmp_path: Path, reads: list[str]) -> None:
    first, second = make_dev_certs(tmp_path / "a"), make_dev_certs(tmp_path / "b")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    shutil.copy(first.cert, cert)
    shutil.copy(first.key, key)
    configs = [client_configuration(TransportSettings(), server_name="localhost", ca=first.ca, cert=cert, key=key)
               for _ in range(2)]
    configs.append(server_configuration(TransportSettings(), cert=cert, key=key))
    assert reads.count(str(cert)) == reads.count(str(key)) == 1
    assert all(c.certificate == configs[0].certificate and c.private_key is configs[0].private_key for c in configs)
    shutil.copy(second.cert, cert)  # a renewed certificate and key
    shutil.copy(second.key, key)
    _bump(cert, 1)
    _bump(key, 1)
    renewed = server_configuration(TransportSettings(), cert=cert, key=key)
    assert reads.count(str(cert)) == reads.count(str(key)) == 2
    assert renewed.certificate != configs[0].certificate
    assert renewed.certificate.public_key() == renewed.private_key.public_key()

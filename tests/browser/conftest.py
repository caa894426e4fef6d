"""Fixtures of the WebTransport tests: a certificate a browser trusts by hash (ECDSA P-256, under 14 days)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aqueduct.quic.webtransport_cert import BrowserCert, make_browser_cert


@pytest.fixture(scope="session")
def browser_cert(tmp_path_factory: pytest.TempPathFactory) -> BrowserCert:
    """A fresh hash-trusted certificate for the session's servers."""
    return make_browser_cert(Path(tmp_path_factory.mktemp("browser-cert")))

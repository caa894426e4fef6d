"""Fixtures of the reliability suite: dev certificates shared by the session."""

from __future__ import annotations

from pathlib import Path

import pytest

from aqueduct.quic.certs import DevCerts, make_dev_certs


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> DevCerts:
    return make_dev_certs(Path(tmp_path_factory.mktemp("certs")))

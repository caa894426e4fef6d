"""The installed distribution declares its licence the PEP 639 way and ships the licence text."""

from __future__ import annotations

from importlib.metadata import distribution
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_license_is_a_pep639_expression_with_its_file() -> None:
    meta = distribution("aqueduct-quic").metadata
    assert meta["License-Expression"] == "MIT"
    assert meta["License"] is None  # the deprecated table form is gone
    assert "LICENSE" in (meta.get_all("License-File") or [])
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")

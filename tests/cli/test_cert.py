"""`aqueduct cert` never silently replaces a CA and its key: existing files need `--force`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "aqueduct"]


def _cert(directory: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "cert", "--dir", str(directory), *extra], capture_output=True, text=True)


def test_cert_refuses_to_overwrite_an_existing_ca(tmp_path: Path) -> None:
    assert _cert(tmp_path).returncode == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    again = _cert(tmp_path)
    assert again.returncode == 2
    line = again.stderr.strip()
    assert "\n" not in line and "--force" in line and "ca.pem" in line
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_cert_force_replaces_the_files(tmp_path: Path) -> None:
    assert _cert(tmp_path).returncode == 0
    old_ca = (tmp_path / "ca.pem").read_bytes()
    forced = _cert(tmp_path, "--force")
    assert forced.returncode == 0, forced.stderr
    assert (tmp_path / "ca.pem").read_bytes() != old_ca


def test_cert_writes_into_an_empty_existing_directory(tmp_path: Path) -> None:
    out = _cert(tmp_path / "fresh")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "fresh" / "ca.key").exists()

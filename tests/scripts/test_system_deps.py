"""The skip path of tests that need a system piece: scripts/setup-system.sh --check, tests/system_deps.py and
the `requires_system` marker, on a machine made to lack a package (a fake `dpkg-query` first on PATH)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.system_deps import SETUP_SYSTEM, check, requires_system

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """PATH with a dpkg-query that knows no installed package: every apt-installed piece looks missing."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dpkg-query"
    fake.write_text("#!/bin/sh\necho \"dpkg-query: no packages found matching $4\" >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("AQUEDUCT_REQUIRE_SYSTEM", raising=False)
    check.cache_clear()
    yield dict(os.environ)
    check.cache_clear()


def test_check_names_the_missing_packages_why_and_the_command(no_packages: dict[str, str]) -> None:
    out = subprocess.run(["bash", str(SETUP_SYSTEM), "--check", "chromium"], capture_output=True, text=True,
                         env=no_packages, timeout=60)  # fmt: skip
    assert out.returncode == 1
    assert "chromium missing: Debian packages chromium fonts-dejavu-core" in out.stdout
    assert "headless browser" in out.stdout
    assert "scripts/setup-system.sh chromium" in out.stdout


def test_unknown_piece_is_refused() -> None:
    out = subprocess.run(["bash", str(SETUP_SYSTEM), "--check", "nope"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "unknown piece 'nope'" in out.stderr


def test_requires_system_skips_with_reason_and_command(no_packages: dict[str, str]) -> None:
    with pytest.raises(pytest.skip.Exception) as skipped:
        requires_system("openweaver")
    text = str(skipped.value)
    assert "needs system piece 'openweaver'" in text
    assert "libsodium-dev" in text and "scripts/setup-system.sh openweaver" in text


def test_requires_system_fails_under_require_env(no_packages: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AQUEDUCT_REQUIRE_SYSTEM", "1")
    with pytest.raises(pytest.fail.Exception, match="AQUEDUCT_REQUIRE_SYSTEM=1"):
        requires_system("netns")


SAMPLE = """
import pytest

@pytest.mark.requires_system("chromium")
def test_needs_a_browser():
    pass
"""


def test_marker_skip_shows_in_the_summary_and_fails_in_ci(no_packages: dict[str, str], tmp_path: Path) -> None:
    sample = tmp_path / "test_sample.py"
    sample.write_text(SAMPLE)
    argv = [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider", "-rs", "-q", str(sample)]
    local = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=no_packages, timeout=120)
    assert local.returncode == 0, local.stdout[-2000:]
    assert "1 skipped" in local.stdout
    assert "SKIPPED" in local.stdout and "scripts/setup-system.sh chromium" in local.stdout
    ci = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120,
                        env={**no_packages, "AQUEDUCT_REQUIRE_SYSTEM": "1"})  # fmt: skip
    assert ci.returncode == 1, ci.stdout[-2000:]
    assert "1 error" in ci.stdout and "scripts/setup-system.sh chromium" in ci.stdout


def test_present_pieces_report_what_they_found() -> None:
    """On this machine (CI installs everything) each piece is present and says what it found."""
    for piece in ("chromium", "openweaver", "netns", "java", "aeron"):
        requires_system(piece)

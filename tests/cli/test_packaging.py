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


def test_the_distribution_has_a_name_of_its_own_and_only_that_one() -> None:
    """aqueduct-py on the package index is another project's (it installs a top-level `aqueduct` too): the
    distribution is aqueduct-quic (PROJ-11, specs/decisions/project.md), named so in pyproject, the installed
    metadata and every file of the tree, the old name kept only where the docs name the other distributions."""
    import subprocess
    import tomllib

    from aqueduct.native import DISTRIBUTION

    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"] == DISTRIBUTION == "aqueduct-quic"
    assert distribution(DISTRIBUTION).metadata["Name"] == DISTRIBUTION
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT, check=True).stdout.split()
    old = "aqueduct" + "-py"
    allowed = {"docs/getting-started.md", "specs/decisions/project.md", "CHANGELOG.md", "scripts/setup.sh",
               "tests/cli/test_packaging.py"}
    using = [path for path in tracked if path not in allowed and (ROOT / path).is_file()
             and old in (ROOT / path).read_text(errors="replace")]
    assert using == [], f"the old distribution name in {using}"

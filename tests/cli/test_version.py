"""`aqueduct --version` and `aeron_compat --version` print the installed package's version, which is
pyproject.toml's: the one place a version is written (docs/releases.md); aqueduct's also says whether its wire
and engine run compiled or pure (aqueduct/native.py)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

import aqueduct
from aeron_compat.tools.cli import main as aeron_compat_main
from aqueduct.cli import main as aqueduct_main
from aqueduct.native import compiled

ROOT = Path(__file__).resolve().parents[2]


def _pyproject_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def test_the_installed_version_is_pyprojects() -> None:
    assert version("aqueduct-quic") == _pyproject_version()
    assert aqueduct.__version__ == _pyproject_version()
    assert "__version__" in dir(aqueduct)


@pytest.mark.parametrize("command", ["aqueduct", "aeron_compat"])
def test_console_scripts_print_the_version(command: str) -> None:
    out = subprocess.run([str(Path(sys.executable).with_name(command)), "--version"], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    mode = f", {compiled()}" if command == "aqueduct" else ""  # which wire and engine run (aqueduct/native.py)
    assert out.stdout == f"{command} {_pyproject_version()}{mode}\n"


@pytest.mark.parametrize("main", [aqueduct_main, aeron_compat_main], ids=["aqueduct", "aeron_compat"])
def test_version_exits_zero_before_any_subcommand(main: object, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])  # type: ignore[operator]
    assert exited.value.code == 0
    assert _pyproject_version() in capsys.readouterr().out

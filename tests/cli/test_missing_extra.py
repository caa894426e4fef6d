"""Commands that need the `spark` extra say how to install it instead of a ModuleNotFoundError traceback."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from aqueduct import cli
from aqueduct.quic.certs import DevCerts

# Runs the CLI with pyarrow and pyspark made unimportable, as on an install without the extra.
WITHOUT_SPARK = ("import sys; sys.modules['pyarrow'] = None; sys.modules['pyspark'] = None; "
                 "from aqueduct.cli import main; sys.exit(main(sys.argv[1:]))")


@pytest.mark.parametrize("command", [
    ["analyze", "{rec}"],
    ["replay", "{rec}", "--to", "aqueduct://127.0.0.1:9", "--ca", "{ca}"],
    ["demo", "--record", "{rec}"],
])
def test_missing_spark_extra_is_one_line_naming_the_install(
    tmp_path: Path, certs: DevCerts, command: list[str]
) -> None:
    argv = [part.format(rec=tmp_path, ca=certs.ca) for part in command]
    out = subprocess.run([sys.executable, "-c", WITHOUT_SPARK, *argv], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    line = out.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "pip install 'aqueduct-quic[spark]'" in line and "pyarrow" in line


def test_other_missing_modules_still_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    def needs_something_else(args: argparse.Namespace) -> int:
        raise ModuleNotFoundError("No module named 'not_an_extra'", name="not_an_extra")

    parser = argparse.ArgumentParser()
    parser.set_defaults(func=needs_something_else, command="x")
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    with pytest.raises(ModuleNotFoundError):
        cli.main([])

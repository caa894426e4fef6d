"""analyze's checks that need no Spark: missing recordings and missing Java give clear messages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aqueduct.cli import main
from aqueduct.spark.session import JavaMissing, find_java, prepare_environment


def test_no_recording_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(tmp_path / "nothing")]) == 2
    assert "no sealed recording segments" in capsys.readouterr().err


def test_report_needs_an_output_file_and_runs_the_analysis(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["report", str(tmp_path)])  # -o FILE is required
    assert "-o/--output" in capsys.readouterr().err
    # the report itself (opened in a browser): test_html_report.py; here, that `report` reaches the analysis
    assert main(["report", str(tmp_path / "nothing"), "-o", str(tmp_path / "r.html")]) == 2
    assert "no sealed recording segments" in capsys.readouterr().err


def test_missing_java_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(JavaMissing, match="apt-get install openjdk-17"):
        find_java()


def test_old_java_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(JavaMissing, match="Java 11"):
        find_java()


@pytest.mark.requires_system("java")
def test_java_on_this_machine_is_found() -> None:
    assert find_java()[1] >= 17


def test_environment_defaults_for_local_and_remote_masters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    prepare_environment("spark://10.1.2.3:7077")
    assert "SPARK_LOCAL_IP" not in os.environ
    prepare_environment("local[*]")
    assert os.environ["SPARK_LOCAL_IP"] == "127.0.0.1"

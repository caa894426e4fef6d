"""`aqueduct serve --service MODULE:CLASS` serves your service implementation (`--echo`, the default, the echo
service: the two exclude each other, so `--echo` says something); a class that is no implementation is refused."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import aqueduct
from aqueduct.cli import main
from aqueduct.quic.certs import DevCerts
from tests.api.conftest import guard

CALC = """
import abc, aqueduct

class Adder(aqueduct.Service):
    @abc.abstractmethod
    async def add(self, a: int, b: int) -> int: ...

class AdderImpl(Adder):
    async def add(self, a: int, b: int) -> int:
        return a + b
"""


async def test_serve_runs_your_service(certs: DevCerts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "adder.py").write_text(CALC)
    monkeypatch.syspath_prepend(str(tmp_path))
    import adder  # type: ignore[import-not-found]

    proc = subprocess.Popen([sys.executable, "-m", "aqueduct", "serve", "--service", "adder:AdderImpl", "--port",
                             "0", "--cert", str(certs.cert), "--key", str(certs.key)], cwd=tmp_path,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        host, _, port = proc.stdout.readline().strip().removeprefix("listening on ").rpartition(":")
        conn: Any
        async with aqueduct.connect(f"aqueduct://{host}:{port}", ca=certs.ca, service=adder.Adder) as conn:
            assert await guard(conn.service.add(2, 40)) == 42
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_refuses_what_is_not_a_service_implementation(certs: DevCerts, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "adder2.py").write_text(CALC)
    monkeypatch.chdir(tmp_path)
    base = ["serve", "--port", "0", "--cert", str(certs.cert), "--key", str(certs.key)]
    assert main([*base, "--service", "adder2:Adder"]) == 2  # the interface: abstract
    assert "not an implementation of an aqueduct.Service interface" in capsys.readouterr().err
    assert main([*base, "--service", "adder2"]) == 2
    assert "expected MODULE:CLASS" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--service", "adder2:AdderImpl", "--echo"])

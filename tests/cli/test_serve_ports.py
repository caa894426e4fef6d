"""Ports beyond 0-65535 are refused with a ConfigError naming the value, from the CLI and from the API (the
socket layer would otherwise take them modulo 65536: `--port 99999` listened on 34463)."""

from __future__ import annotations

import pytest

import aqueduct
from aqueduct.api.endpoints import check_port
from aqueduct.cli import main
from aqueduct.quic.certs import DevCerts


@pytest.mark.parametrize("port", [99999, 65536, -1])
def test_cli_serve_refuses_a_port_out_of_range(port: int, certs: DevCerts, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--port", str(port), "--cert", str(certs.cert), "--key", str(certs.key)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"aqueduct serve: --port {port} is not a port number: 0 to 65535")


def test_cli_serve_refuses_a_metrics_port_out_of_range(certs: DevCerts, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["serve", "--port", "0", "--metrics-port", "70000", "--cert", str(certs.cert), "--key", str(certs.key)]
    assert main(argv) == 2
    assert "--metrics-port 70000 is not a port number" in capsys.readouterr().err


async def test_api_serve_refuses_a_port_out_of_range(certs: DevCerts) -> None:
    with pytest.raises(aqueduct.ConfigError, match="port 99999 is not a port number"):
        async with aqueduct.serve("127.0.0.1", 99999, cert=certs.cert, key=certs.key):
            pass
    with pytest.raises(aqueduct.ConfigError, match="metrics port 65536"):
        async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, metrics=("127.0.0.1", 65536)):
            pass


def test_edges_are_ports() -> None:
    assert [check_port(p) for p in (0, 1, 65535)] == [0, 1, 65535]
    with pytest.raises(aqueduct.ConfigError):
        check_port(True)

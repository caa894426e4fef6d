"""The echo examples over Aqueduct/QUIC: across processes (server and clients each their own process)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=60, check=False)


@pytest.fixture
def server_process() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        proc.terminate()
        proc.wait(timeout=10)


def start(started: list[subprocess.Popen[str]], script: str, *args: str) -> None:
    proc = subprocess.Popen([sys.executable, str(EXAMPLES / script), "server", "--seconds", "60", *args],
                            stdout=subprocess.PIPE, text=True)
    started.append(proc)
    assert proc.stdout is not None and "on localhost" in proc.stdout.readline()


def test_echo2_across_processes_refuses_the_client_over_the_limit(
        server_process: list[subprocess.Popen[str]]) -> None:
    ports = ["--port", "26000", "--control-port", "26001"]
    start(server_process, "aeron_echo2.py", *ports, "--base-port", "26010", "--per-ip", "2")
    results = [run("aeron_echo2.py", "client", *ports, "--message", f"m{i}") for i in range(3)]
    assert [r.returncode for r in results] == [0, 0, 1]
    assert [r.stdout.strip() for r in results[:2]] == ["m0", "m1"]
    assert "too many connections for IP address" in results[2].stdout


def test_response_channel_echo_across_processes(server_process: list[subprocess.Popen[str]]) -> None:
    start(server_process, "aeron_echo_response.py", "--port", "26100", "--per-ip", "1")
    first = run("aeron_echo_response.py", "client", "--port", "26100", "--message", "through one connection")
    assert first.returncode == 0 and first.stdout.strip() == "CONNECTED / ECHO through one connection"


def test_take1_over_quic_in_one_process() -> None:
    result = run("aeron_echo_take1.py", "demo", "--media", "aqueduct", "--rounds", "2", "--interval", "0")
    assert result.returncode == 0 and result.stdout.count("response:") == 2

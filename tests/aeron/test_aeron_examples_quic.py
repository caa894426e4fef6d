"""The echo examples over Aqueduct/QUIC: across processes (server and clients each their own process)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def free_ports(count: int) -> list[str]:
    """`count` consecutive free UDP ports (fixed numbers collide with concurrent runs of the suite)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + count > 65535:
            continue
        try:
            held = []
            for p in range(base, base + count):
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                held.append(sock)
                sock.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            for sock in held:
                sock.close()
        return [str(p) for p in range(base, base + count)]


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
    free = free_ports(2 + 2 * 4)
    ports = ["--port", free[0], "--control-port", free[1]]
    start(server_process, "aeron_echo2.py", *ports, "--base-port", free[2], "--max-clients", "4", "--per-ip", "2")
    results = [run("aeron_echo2.py", "client", *ports, "--message", f"m{i}") for i in range(3)]
    assert [r.returncode for r in results] == [0, 0, 1]
    assert [r.stdout.strip() for r in results[:2]] == ["m0", "m1"]
    assert "too many connections for IP address" in results[2].stdout


def test_response_channel_echo_across_processes(server_process: list[subprocess.Popen[str]]) -> None:
    (port,) = free_ports(1)
    start(server_process, "aeron_echo_response.py", "--port", port, "--per-ip", "1")
    first = run("aeron_echo_response.py", "client", "--port", port, "--message", "through one connection")
    assert first.returncode == 0 and first.stdout.strip() == "CONNECTED / ECHO through one connection"


def test_take1_over_quic_in_one_process() -> None:
    server_port, client_port = free_ports(2)
    result = run("aeron_echo_take1.py", "demo", "--media", "aqueduct", "--rounds", "2", "--interval", "0",
                 "--port", server_port, "--client-port", client_port)
    assert result.returncode == 0 and result.stdout.count("response:") == 2

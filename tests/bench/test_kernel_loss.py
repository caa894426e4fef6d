"""Kernel loss for `aqueduct bench --loss-curves`: a network namespace whose loopback drops packets at random,
so TCP meets the same loss as Marlin Stream and Aqueduct-on-QUIC (netloss.py). Needs root and `ip` and
`iptables` (scripts/setup-system.sh netns); CI runs as root. No timing is asserted."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aqueduct.bench import netloss, report
from aqueduct.bench.loss import curves
from aqueduct.bench.runner import Options, Results, run
from tests.system_deps import requires_system

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import socket, sys
from aqueduct.bench.netloss import _drop
_drop(float(sys.argv[1]))
a, b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM), socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
b.bind(("127.0.0.1", 0)); b.settimeout(0.5)
got = 0
for _ in range(20):
    a.sendto(b"x", b.getsockname())
    try:
        b.recv(10); got += 1
    except TimeoutError:
        pass
print(got)
"""


@pytest.fixture(scope="module")
def tools() -> None:
    requires_system("netns")
    assert netloss.reason_unavailable() is None


def _in_namespace(loss: float) -> int:
    ns = f"aqtest-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
        out = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", PROBE, str(loss)], check=True,
                             capture_output=True, text=True, timeout=60)
        return int(out.stdout)
    finally:
        subprocess.run(["ip", "netns", "delete", ns], check=True)


def test_the_rule_drops_in_the_namespace_only(tools: None) -> None:
    assert _in_namespace(0.0) == 20
    assert _in_namespace(1.0) == 0  # every datagram on the namespace's loopback dropped
    host = subprocess.run(["iptables", "-w", "-S", "INPUT"], capture_output=True, text=True, check=True).stdout
    assert "statistic" not in host  # the machine's own loopback untouched


@pytest.mark.timeout(300)
def test_a_tiny_run_measures_tcp_stream_aqueduct_and_raw_aioquic_at_every_loss(tools: None) -> None:
    opts = Options(rounds=1, window=0.02, setups=1, api_channels=0, engine_channels=0, only=("marlin",),
                   loss_curves=True, loss_window=0.1, loss_rounds=1)
    results = asyncio.run(run(opts))
    assert {(r["path"], r["loss"]) for r in results.kernel_loss} == {
        (p, x) for p in netloss.PATHS for x in (0.0, 0.01, 0.05)}
    assert all(r["mb_s"] > 0 for r in results.kernel_loss)
    text = report.table(results)
    assert "goodput under kernel loss" in text and "  tcp " in text
    assert any(t.name.startswith("Marlin Stream goodput at 5% kernel loss") for t in report.targets(results))
    for loss in ("1%", "5%"):  # raw aioquic loses the same packets beside Aqueduct: the target has a value
        name = f"Aqueduct goodput at {loss} kernel loss vs raw aioquic"
        assert next(t for t in report.targets(results) if t.name == name).value is not None
    assert report.as_json(results)["kernel_loss_curves"] == results.kernel_loss
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert f"aqbench-{os.getpid()}" not in listed.split()  # the run's namespace is gone (others' may run beside)


def test_without_root_the_report_says_why() -> None:
    results = Results(options={})
    results.loss = curves({"marlin stream": {"0.0": [1.0]}})
    results.kernel_loss_unavailable = "kernel loss needs root (a network namespace and an iptables rule)"
    assert "goodput under kernel loss: not measured (kernel loss needs root" in report.table(results)

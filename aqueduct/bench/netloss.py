"""Goodput under kernel loss: TCP, Marlin Stream, Aqueduct-on-QUIC and raw aioquic losing the same packets, in
one run.

    aqueduct bench --loss-curves        (as root; or: python -m aqueduct.bench.netloss inner ...)

The impairment proxy (loss.py) is UDP, so TCP cannot pass it, and impairing the machine's loopback would
disturb every other process. Here the whole measurement runs in a network namespace of its own (`ip netns`),
whose loopback belongs to it alone: the benchmark peer (peer.py) and the measuring process live there, and
an iptables rule in that namespace drops each packet arriving on its loopback with probability `loss`
(`-m statistic --mode random`: independent loss, both directions, whatever the protocol). Every path then
meets the same kernel-level loss: TCP's own retransmission and congestion control, Marlin Stream's, and
aioquic's under Aqueduct and alone (raw aioquic with its defaults, the rawquic.py baseline: which losses
are Aqueduct's and which aioquic's). "aqueduct ordered raw cubic" is Aqueduct with aioquic's CUBIC for the
sending client instead of its default Reno: the evidence for the `congestion_control` default
(decision QUIC-17). A cell is bulk MB/s (256 KiB messages for `window` seconds,
rate = the peer's count / time to the count's arrival, as everywhere in the bench); rounds alternate the
paths, and each ratio compares a loss level with the same path at 0%.

It needs root (a namespace, iptables) and the `ip` and `iptables` commands (`scripts/setup-system.sh
netns` installs them); `reason_unavailable()` says why it cannot run, and the report prints that instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..core.app import Delivery
from . import peer
from .clients import AqueductClient, TcpClient
from .extras import extra_named, loss_paths
from .loss import LOSSES, bulk_mb_s
from .rawquic import RawQuicClient
from .settings import bench_settings

PATHS = ("tcp", *loss_paths(), "aqueduct ordered raw", "aioquic", "aqueduct ordered raw cubic")
"""The measured paths (the extras that ask, e.g. "marlin stream", after TCP; raw aioquic beside Aqueduct)."""


def reason_unavailable() -> str | None:
    """Why the kernel-loss curves cannot run here, or None."""
    if sys.platform != "linux":
        return "kernel loss needs Linux network namespaces"
    if os.geteuid() != 0:
        return "kernel loss needs root (a network namespace and an iptables rule)"
    missing = [tool for tool in ("ip", "iptables") if shutil.which(tool) is None]
    if missing:
        return f"kernel loss needs {' and '.join(missing)} (scripts/setup-system.sh netns installs them)"
    return None


async def measure(window: float, rounds: int, progress: Callable[[str], None] = lambda _: None,
                  losses: tuple[float, ...] = LOSSES) -> dict[str, dict[str, list[float]]]:
    """MB/s samples per path (PATHS) and loss level (str(loss)), measured in a namespace made for the run."""
    ns = f"aqbench-{os.getpid()}"
    _run("ip", "netns", "add", ns)
    try:
        _run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        proc = await asyncio.create_subprocess_exec(
            "ip", "netns", "exec", ns, sys.executable, "-m", "aqueduct.bench.netloss", "inner",
            "--window", str(window), "--rounds", str(rounds), "--losses", ",".join(str(x) for x in losses),
            stdout=asyncio.subprocess.PIPE)
        assert proc.stdout is not None
        samples: dict[str, dict[str, list[float]]] | None = None
        async for line in proc.stdout:
            msg = json.loads(line)
            if "progress" in msg:
                progress(msg["progress"])
            else:
                samples = msg["samples"]
        if await proc.wait() != 0 or samples is None:
            raise RuntimeError(f"the kernel-loss measurement failed (exit code {proc.returncode})")
        return samples
    finally:
        _run("ip", "netns", "delete", ns)


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=30)


def _drop(loss: float) -> None:
    """In this namespace: drop packets arriving on the loopback with probability `loss` (0: none)."""
    _run("iptables", "-w", "-F", "INPUT")
    if loss > 0:
        _run("iptables", "-w", "-A", "INPUT", "-i", "lo", "-m", "statistic", "--mode", "random",
             "--probability", f"{loss:.4f}", "-j", "DROP")


async def _inner(window: float, rounds: int, losses: list[float]) -> None:
    """Inside the namespace: start the peer, measure every (round, loss, path), print the samples."""
    from ..quic.certs import make_dev_certs

    scratch = tempfile.TemporaryDirectory(prefix="aqueduct-netloss-")  # (private, removed however this ends)
    certs = make_dev_certs(scratch.name)
    proc, ports = peer.spawn(str(certs.cert), str(certs.key))
    samples: dict[str, dict[str, list[float]]] = {p: {} for p in PATHS}
    try:
        for rnd in range(rounds):
            for loss in losses:
                _drop(loss)
                for path in PATHS[rnd % len(PATHS):] + PATHS[:rnd % len(PATHS)]:
                    print(json.dumps({"progress": f"kernel loss round {rnd + 1}/{rounds}: {path} at {loss:.0%} loss"}),
                          flush=True)
                    extra = extra_named(path)
                    client: Any = (TcpClient(ports["tcp"]) if path == "tcp" else extra.client(ports[extra.key])
                                   if extra is not None else RawQuicClient(ports["aioquic"], certs.ca)
                                   if path == "aioquic" else
                                   AqueductClient(ports["aqueduct-raw"], certs.ca, "raw", Delivery.ORDERED,
                                                  settings=replace(bench_settings(), congestion_control="cubic")
                                                  if path.endswith(" cubic") else None))
                    samples[path].setdefault(str(loss), []).append(await bulk_mb_s(client, window))
    finally:
        _drop(0)
        peer.stop(proc)
        scratch.cleanup()
    print(json.dumps({"samples": samples}), flush=True)


def main() -> None:
    """`python -m aqueduct.bench.netloss inner --window S --rounds N --losses 0,0.01,0.05` (inside a namespace)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["inner"])
    ap.add_argument("--window", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--losses", default=",".join(str(x) for x in LOSSES))
    args = ap.parse_args()
    asyncio.run(_inner(args.window, args.rounds, [float(x) for x in args.losses.split(",")]))


if __name__ == "__main__":
    main()

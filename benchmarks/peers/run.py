"""The runner's side of the peer rows: start each needed server process once, measure a row per round.

Each server kind runs in a process of its own (serve.py), started once per run; each (row, round) is
measured by a fresh measuring process (measure.py), so client CPU is that row's alone. A kind whose
library or program is missing, whose server does not start, or a measurement that fails, is reported
as the reason in `Results.unmeasured`, and the run goes on.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

from .. import command
from . import KINDS, PeerRow, unavailable

STOP_WAIT = 15.0


class Servers:
    """The peer server processes of one run, by kind; `reasons` holds why a kind has none."""

    def __init__(self) -> None:
        self.info: dict[str, dict[str, Any]] = {}
        self.reasons: dict[str, str] = {}
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, kinds: list[str], cert: Path, key: Path, uvloop: bool) -> None:
        """Start one server process per kind that can run here."""
        for kind in kinds:
            why = unavailable(kind)
            if why is not None:
                self.reasons[kind] = why
                continue
            cmd = command("benchmarks.peers.serve", "--kind", kind, "--cert", str(cert), "--key", str(key),
                          *(["--uvloop"] if uvloop else []))
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
            assert proc.stdout is not None and proc.stderr is not None
            line = proc.stdout.readline()
            if not line:
                proc.wait(STOP_WAIT)
                tail = proc.stderr.read().strip().splitlines()
                self.reasons[kind] = f"its server did not start ({tail[-1] if tail else proc.returncode})"
                continue
            self.procs.append(proc)
            self.info[kind] = json.loads(line)

    def stop(self) -> None:
        """End every server process (each stops on end of input; killed after STOP_WAIT seconds)."""
        for proc in self.procs:
            assert proc.stdin is not None
            proc.stdin.close()
        for proc in self.procs:
            try:
                proc.wait(STOP_WAIT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(STOP_WAIT)


async def measure_row(row: PeerRow, server: dict[str, Any], ca: Path, window: float, setups: int, idle: int,
                      uvloop: bool) -> dict[str, float]:
    """One measuring process for `row`: its {workload: value}; RuntimeError (with its last error line) if it
    failed."""
    cmd = command("benchmarks.peers.measure", "--row", row.name, "--server", json.dumps(server), "--ca", str(ca),
                  "--window", str(window), "--setups", str(setups), "--idle", str(idle),
                  *(["--uvloop"] if uvloop else []))
    proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()
        raise RuntimeError(tail[-1] if tail else f"exit code {proc.returncode}")
    values: dict[str, float] = json.loads(out)
    return values


def kinds_of(rows: list[PeerRow]) -> list[str]:
    """The server kinds `rows` need, in KINDS order."""
    needed = {r.kind for r in rows}
    return [k for k in KINDS if k in needed]

"""Facts about the machine and the tree a benchmark ran on, kept with its results.

A saved run (`aqueduct bench --save`) is only comparable with another one
when one knows where each ran: CPU model and count, memory, kernel, Python,
aioquic, the event loop, whether the wire and engine ran compiled or pure (aqueduct/native.py), the load
average when it started and ended, and the git commit of the tree (with whether it had local changes). Every fact is
best-effort: a missing /proc file or git leaves that fact None.
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any


def _first_line_with(path: str, prefix: str) -> str | None:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def _version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def git_facts(where: Path | None = None) -> dict[str, Any]:
    """The commit of the tree holding `where` (default: this package) and whether it had local changes."""
    cwd = where or Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip() != ""
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


def _compiled() -> dict[str, Any]:
    """Whether this process (and the peer processes, which inherit AQUEDUCT_PURE) ran the compiled wire and
    engine (aqueduct/native.py)."""
    from ..native import compiled

    state = compiled()
    return {"active": state.active, "modules": len(state.modules), "reason": state.reason}


def facts() -> dict[str, Any]:
    """Everything known about this machine now (see the module docstring)."""
    mem_kb = _first_line_with("/proc/meminfo", "MemTotal")
    return {
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "hostname": platform.node(),
        "cpu_model": _first_line_with("/proc/cpuinfo", "model name") or platform.processor() or None,
        "cpus": os.cpu_count(),
        "memory_bytes": int(mem_kb.split()[0]) * 1024 if mem_kb else None,
        "kernel": platform.release(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "aioquic": _version("aioquic"),
        "aqueduct": _version("aqueduct-quic"),
        "compiled": _compiled(),
        "uvloop": _version("uvloop"),
        "load_average": list(os.getloadavg()),
        "git": git_facts(),
    }

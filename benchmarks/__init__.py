"""The bench lab: what `aqueduct bench` measures beside Aqueduct that a user's install does not ship.

The installed package keeps what a user runs (`aqueduct bench` against raw aioquic and TCP: aqueduct/bench/).
This package holds the rest, in the repository only: the peer rows (`peers/`: grpcio, ZeroMQ and NATS clients
and servers, the `bench` extra) and the service rows (`services.py`), which `aqueduct bench --peers` and
`--services` load from a checkout (aqueduct/bench/lab.py), beside the standalone benchmark scripts of this
directory (`python benchmarks/NAME.py`), the saved runs (results/) and the profiles (profiles/).

The arrow runs one way: this package builds on aqueduct; aqueduct imports nothing of it (import-linter). Its
processes (a peer's server, a row's measuring process) start with `command`: the checkout is appended to
their path, never put first, so the aqueduct they import is the installed one (a wheel's compiled modules, when
the lead measures a wheel from a checkout) and not the checkout's sources.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The checkout holding this package."""


def command(module: str, *args: str) -> list[str]:
    """The command running `python -m module args` for a module of this package with the installed aqueduct:
    `-P` keeps the current directory (a checkout) off the front of the path; the checkout is appended."""
    boot = (f"import runpy, sys; sys.path.append({str(ROOT)!r}); "
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")
    return [sys.executable, "-P", "-c", boot, *args]

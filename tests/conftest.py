"""Suite-wide test settings.

Hypothesis: no per-example deadline (tests never judge wall time, and a
loaded 2-core machine makes deadlines flaky). Under CI (CI=true) the
examples are derandomized so a CI run is reproducible; local runs explore
fresh examples each time.

Fixtures for every folder: `certs` (dev certificates, one set per session),
`io_modules_loaded_by` (which I/O modules an import pulls in) and `chromium`
(Debian's headless Chromium, installed once by scripts/chromium.sh).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

from aqueduct.quic.certs import DevCerts, make_dev_certs

settings.register_profile("aqueduct", deadline=None)
settings.register_profile("aqueduct-ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("aqueduct-ci" if os.environ.get("CI") else "aqueduct")


def _io_modules_loaded_by(names: list[str]) -> str:
    code = (
        "import importlib, sys\n"
        f"for n in {names!r}: importlib.import_module(n)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('asyncio', 'aioquic', 'socket')))\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def io_modules_loaded_by() -> Callable[[list[str]], str]:
    """Import the named modules in a fresh interpreter; its printout lists the asyncio/aioquic/socket modules loaded."""
    return _io_modules_loaded_by


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> DevCerts:
    """Development certificates (CA, server cert and key) in a temporary directory, made once per session."""
    return make_dev_certs(Path(tmp_path_factory.mktemp("certs")))


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of a headless Chromium (Debian's; scripts/chromium.sh installs it on first use, as root)."""
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run(["bash", str(root / "scripts" / "chromium.sh")], capture_output=True, text=True,
                            timeout=900)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]

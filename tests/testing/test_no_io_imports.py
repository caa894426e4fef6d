"""The sans-I/O layers (aqueduct.core, aqueduct.testing) import no asyncio, aioquic or socket."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("asyncio", "aioquic", "socket")


def test_core_and_testing_import_no_io_modules() -> None:
    code = (
        "import sys\n"
        "import aqueduct.core.engine, aqueduct.core.app, aqueduct.core.transport, aqueduct.core.config\n"
        "import aqueduct.testing, aqueduct.testing.driver, aqueduct.testing.fake\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout

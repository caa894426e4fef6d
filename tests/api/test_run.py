"""A user's server stopped with Ctrl-C (or SIGTERM) ends with one line: `aqueduct.run` is asyncio.run that
turns the signal into the main task's cancellation (so `serve` closes its connections) and the exit into
`stopped: Ctrl-C` on stderr with the shell's status for that signal, instead of a 25-line traceback."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from harness.signals import terminal_sigint

from aqueduct.quic.certs import DevCerts

SERVER = """
import sys, aqueduct

async def main() -> None:
    async with aqueduct.serve("127.0.0.1", 0, cert=sys.argv[1], key=sys.argv[2]) as srv:
        print("listening", flush=True)
        async for conn in srv:
            pass

aqueduct.run(main())
"""


@pytest.mark.parametrize(("sig", "line", "status"), [(signal.SIGINT, "stopped: Ctrl-C", 130),
                                                     (signal.SIGTERM, "stopped: SIGTERM", 143)])
def test_a_server_stopped_by_a_signal_ends_with_one_line(certs: DevCerts, tmp_path: Path, sig: int, line: str,
                                                         status: int) -> None:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(certs.cert), str(certs.key)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=terminal_sigint)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "listening\n"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert err.splitlines() == [line], err
    assert proc.returncode == status

"""The Services guide's program runs as the guide says: its three `calc.py` blocks joined into one file, a
development certificate in `certs/`, `python calc.py server` in one process and `python calc.py` in another;
the client prints what the guide shows, and SIGTERM stops the server gracefully with one line."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

from aqueduct.quic.certs import make_dev_certs

from .blocks import block


def test_the_services_guide_program_serves_answers_and_stops(tmp_path: Path) -> None:
    program = block("docs/services.md", "class Calculator")
    assert program.title == "calc.py" and "async def server()" in program.code and "async def client()" in program.code
    shown = block("docs/services.md", "add: 3").code
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "calc.py").write_text(program.code.replace("4433", str(port)))
    make_dev_certs(tmp_path / "certs")
    server = subprocess.Popen([sys.executable, "calc.py", "server"], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        assert server.stdout.readline() == f"serving on ('127.0.0.1', {port})\n"
        client = subprocess.run([sys.executable, "calc.py"], cwd=tmp_path, capture_output=True, text=True,
                                timeout=60)
        assert client.returncode == 0, client.stderr
        assert client.stdout == shown
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=60)
        assert err.splitlines() == ["stopped: SIGTERM"] and server.returncode == 143
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()

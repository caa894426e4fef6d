"""The README's client-and-server snippet runs as written (with a free port and the test certificates)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from aqueduct.quic.certs import DevCerts

ROOT = Path(__file__).resolve().parents[2]


def _snippet() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Using the API"):]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_readme_client_and_server_snippet_runs(certs: DevCerts, tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = (_snippet().replace("4433", str(port)).replace("certs/ca.pem", str(certs.ca))
            .replace("certs/cert.pem", str(certs.cert)).replace("certs/key.pem", str(certs.key)))
    code += (
        "\nasync def main() -> None:\n"
        "    serving = asyncio.ensure_future(server())\n"
        "    while True:  # until the server listens: its first client attempt fails fast (nothing listening)\n"
        "        try:\n"
        "            await client()\n"
        "            break\n"
        "        except aqueduct.ConnectError:\n"
        "            await asyncio.sleep(0.05)\n"
        "    serving.cancel()\n"
        "\nasyncio.run(main())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"listening on ('127.0.0.1', {port})", "{'time': '12:00'}"]


"""Build (cached) and run OpenWeaver's example server as a live interop peer."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build() -> Path:
    """The directory holding ow_server and ow_client (built on first use, cached by source hash)."""
    out = subprocess.run(["bash", str(ROOT / "scripts" / "build_openweaver.sh")], check=True, capture_output=True,
                         text=True, timeout=900)
    return Path(out.stdout.strip().splitlines()[-1])


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def key_dir(tmp: Path, secret: bytes) -> Path:
    """A working directory whose ./.marlin/keys/static the examples read as their static secret key."""
    keys = tmp / ".marlin" / "keys"
    keys.mkdir(parents=True)
    (keys / "static").write_bytes(secret)
    return tmp

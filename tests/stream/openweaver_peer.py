"""Build (cached) and run OpenWeaver's example server as a live interop peer (third_party/openweaver)."""

from __future__ import annotations

import functools
import socket
import subprocess
from pathlib import Path

from tests.system_deps import requires_system

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _built() -> Path:
    out = subprocess.run(["bash", str(ROOT / "scripts" / "build_openweaver.sh")], capture_output=True, text=True,
                         timeout=900)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return Path(out.stdout.strip().splitlines()[-1])


def build() -> Path:
    """The directory holding ow_server and ow_client: built once (cached on disk by source hash, and per
    process); the test skips, naming scripts/setup-system.sh openweaver, if the build packages are missing."""
    requires_system("openweaver")
    return _built()


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

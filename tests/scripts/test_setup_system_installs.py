"""scripts/setup-system.sh names every Debian package before it installs anything: each piece's packages and
why, then the dependencies apt pulls in (read from `apt-get -s`), and keeps apt's and debconf's chatter back.
Run against fake `apt-get`, `dpkg-query` and `id` (root, nothing installed) first on PATH: nothing is installed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

APT_GET = """#!/bin/sh
echo "apt-get $*" >> "$APT_LOG"
case " $* " in
  *" update "*) echo "debconf: delaying package configuration, since apt-utils is not installed" >&2 ;;
  *" -s "*)
    for p in chromium fonts-dejavu-core libatk1.0-0 libnss3 chromium-common; do
      echo "Inst $p (1.0 Debian:12/stable [amd64])"
    done ;;
  *" install "*) echo "debconf: delaying package configuration, since apt-utils is not installed" >&2
                 echo "INSTALLED" >> "$APT_LOG" ;;
esac
"""


def _fake(bin_dir: Path, name: str, text: str) -> None:
    path = bin_dir / name
    path.write_text(text)
    path.chmod(0o755)


def test_every_package_is_named_before_anything_is_installed(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake(bin_dir, "apt-get", APT_GET)
    _fake(bin_dir, "dpkg-query", "#!/bin/sh\nexit 1\n")  # nothing installed
    _fake(bin_dir, "id", "#!/bin/sh\necho 0\n")  # root: no sudo
    log = tmp_path / "apt.log"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "APT_LOG": str(log)}
    out = subprocess.run(["bash", str(ROOT / "scripts" / "setup-system.sh"), "chromium"], capture_output=True,
                         text=True, env=env, timeout=60)
    # (the fake install leaves chromium missing to dpkg-query, so the script ends saying so)
    assert "setup-system: chromium still missing after install" in out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == ("setup-system: chromium: apt-get install chromium fonts-dejavu-core (headless browser for "
                        "the HTML report test)")
    assert lines[1] == ("setup-system: apt adds 3 packages the above depend on (no recommends): libatk1.0-0 libnss3 "
                        "chromium-common")
    calls = log.read_text().splitlines()
    simulated = next(i for i, c in enumerate(calls) if " -s " in c)
    installed = calls.index("INSTALLED")
    assert simulated < installed  # named (from the simulation) before the real install
    assert "debconf" not in out.stdout + out.stderr

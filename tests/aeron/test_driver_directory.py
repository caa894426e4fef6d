"""The driver directory against another local user (issue 26 item 11).

The default directory is `/tmp/aeron_compat-$USER`: a name any local user can guess and create first.
Each test leaves the file system as uid 65534 ("nobody") would (directories and symbolic links
`chown`ed to it; the fake driver is a real process running as 65534 when it listens), then runs the
victim, root, the way the victim's code runs. Refused: a directory owned by another user, one that
group or others may write, a directory that is a symbolic link, a lock file that is a symbolic link,
and a driver socket served by another user; the error (`UnsafeDirectory`) names the path and the owner.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeron_compat import Aeron, Context
from aeron_compat.client.directory import UnsafeDirectory, private_dir
from aeron_compat.driver.proxy import DriverProxy
from aeron_compat.driver.standalone import LOCK_NAME, SOCKET_NAME, StandaloneDriver
from aeron_compat.media.aqueduct_link import dev_certs

NOBODY = 65534
VICTIM_FILE = b"precious data of the victim, " * 7 + b"end"  # 206 bytes

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second user (uid 65534)")


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A short temporary directory: a unix socket's path must fit 108 bytes, which pytest's own tmp_path (under
    xdist's per-worker folder) can exceed."""
    path = Path(tempfile.mkdtemp(prefix="aqd-", dir="/tmp"))
    os.chmod(path, 0o755)  # (uid 65534's fake driver must reach its socket inside)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _as_nobody(path: Path) -> Path:
    os.lchown(path, NOBODY, NOBODY)
    return path


def _attacker_dirs(base: Path) -> Path:
    """What uid 65534 leaves after creating the victim's base directory and its standalone directory first."""
    base.mkdir(mode=0o755)
    _as_nobody(base)
    standalone = base / "standalone"
    standalone.mkdir(mode=0o755)
    return _as_nobody(standalone)


FAKE_DRIVER = """
import os, socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.bind(sys.argv[1])
os.lchown(sys.argv[1], 65534, 65534)
os.setgroups([]); os.setgid(65534); os.setuid(65534)   # listen as uid 65534
sock.listen(1)
print("listening", flush=True)
sock.settimeout(float(sys.argv[2]))
try:
    conn, _ = sock.accept()
    print("victim connected", flush=True)
except TimeoutError:
    print("nobody came", flush=True)
"""


def _fake_driver(path: Path, wait: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", FAKE_DRIVER, str(path), str(wait)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "listening\n"
    return proc


@as_root
def test_a_symlinked_lock_in_another_users_directory_truncates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM_FILE)
    base = tmp_path / "aeron_compat-root"
    standalone = _attacker_dirs(base)
    lock = standalone / LOCK_NAME
    lock.symlink_to(victim)
    _as_nobody(lock)
    monkeypatch.setenv("AERON_COMPAT_DIR", str(base))
    driver = StandaloneDriver(Context(counters_interval=0))
    with pytest.raises(UnsafeDirectory, match=rf"{base}.* owned by uid {NOBODY}\b") as err:
        asyncio.run(driver.run(ready=lambda d: d.stopping.set()))
    assert err.value.path == base and err.value.owner == NOBODY
    assert victim.read_bytes() == VICTIM_FILE


@as_root
def test_a_driver_socket_in_another_users_directory_is_never_connected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path / "aeron_compat-root"
    standalone = _attacker_dirs(base)
    fake = _fake_driver(standalone / SOCKET_NAME, wait=2.0)
    monkeypatch.setenv("AERON_COMPAT_DIR", str(base))
    with pytest.raises(UnsafeDirectory, match=rf"owned by uid {NOBODY}\b"):
        Aeron.connect(Context(driver_mode="standalone", counters_interval=0))
    with pytest.raises(UnsafeDirectory):  # "auto" does not fall back to an embedded driver either: it says why
        Aeron.connect(Context(driver_mode="auto", counters_interval=0))
    assert fake.communicate(timeout=20)[0] == "nobody came\n"


@as_root
def test_a_driver_socket_served_by_another_user_is_refused(tmp_path: Path) -> None:
    """The directory is ours, but the process listening on its socket is not: the peer's uid is checked."""
    directory = private_dir(tmp_path / "drv")
    fake = _fake_driver(directory / SOCKET_NAME, wait=20.0)
    with pytest.raises(UnsafeDirectory, match=rf"{directory / SOCKET_NAME}.* uid {NOBODY}\b"):
        DriverProxy(Context(driver_mode="standalone", aeron_dir=directory, counters_interval=0))
    assert fake.communicate(timeout=20)[0] == "victim connected\n"


@as_root
def test_an_embedded_driver_and_the_dev_certificates_refuse_another_users_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path / "aeron_compat-root"
    _attacker_dirs(base)
    monkeypatch.setenv("AERON_COMPAT_DIR", str(base))
    with pytest.raises(UnsafeDirectory, match=rf"owned by uid {NOBODY}\b"):
        Aeron.connect(Context(counters_interval=0, udp_media="loopback"))
    with pytest.raises(UnsafeDirectory):  # else a CA planted there would be trusted, its key ours
        dev_certs()
    assert sorted(p.name for p in base.iterdir()) == ["standalone"]


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777])
def test_a_directory_others_may_write_is_refused(tmp_path: Path, mode: int) -> None:
    directory = tmp_path / "drv"
    directory.mkdir()
    directory.chmod(mode)
    with pytest.raises(UnsafeDirectory, match=rf"{directory}: group or others may write it \(mode {mode:#o}\)"):
        Aeron.connect(Context(aeron_dir=directory, counters_interval=0, udp_media="loopback"))


def test_a_symlinked_directory_and_a_symlinked_lock_are_refused(tmp_path: Path) -> None:
    real = private_dir(tmp_path / "real")
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(UnsafeDirectory, match=rf"{link}: a symbolic link"):
        private_dir(link)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM_FILE)
    (real / LOCK_NAME).symlink_to(victim)
    with pytest.raises(UnsafeDirectory, match=rf"{real / LOCK_NAME}: a symbolic link"):
        asyncio.run(StandaloneDriver(Context(aeron_dir=real, counters_interval=0)).run())
    assert victim.read_bytes() == VICTIM_FILE


def test_fresh_directories_are_private_and_ours_are_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / "aeron_compat-root"
    monkeypatch.setenv("AERON_COMPAT_DIR", str(base))
    with Aeron.connect(Context(counters_interval=0, udp_media="loopback")):
        assert stat.S_IMODE(base.stat().st_mode) == 0o700
        (own,) = base.glob("driver-*")
        assert stat.S_IMODE(own.stat().st_mode) == 0o700
    with Aeron.connect(Context(counters_interval=0, udp_media="loopback")):  # an existing private one is fine
        pass
    assert stat.S_IMODE(dev_certs().key.parent.stat().st_mode) == 0o700


def test_the_development_ca_key_is_never_in_the_shared_temporary_directory(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The dev CA (its private key with it) once lived in /tmp/aeron_compat-$USER/dev-certs: now the user's state
    directory, unless AERON_COMPAT_DIR names a directory of the user's choosing."""
    from aeron_compat.media.aqueduct_link import dev_certs

    monkeypatch.delenv("AERON_COMPAT_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    certs = dev_certs()
    assert certs.ca_key.parent == tmp_path / "state" / "aeron_compat" / "dev-certs" and certs.ca_key.exists()
    assert "aeron_compat-" not in str(certs.ca_key)  # (not the shared base, /tmp/aeron_compat-$USER)
    monkeypatch.setenv("AERON_COMPAT_DIR", str(tmp_path / "base"))
    assert dev_certs().ca_key.parent == tmp_path / "base" / "dev-certs"

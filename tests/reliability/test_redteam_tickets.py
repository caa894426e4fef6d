"""FileTicketStore against a second local user (issue 36 item 5): the resumption secret is never readable by
another user while it is written, and a link planted where the store writes cannot redirect the write.

Before: the temporary file `path.tmp` was created 0644 and made 0600 after the write (uid 65534 read the
secret 2,696-3,068 times in 3,000 saves), and a symlink planted as `path.tmp` in a directory that user could
write made the client overwrite the file it pointed to. The attacks run as uid 65534 (tests/reliability/nobody.py).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from aioquic.tls import CipherSuite, SessionTicket

import aqueduct
from aqueduct.quic.tickets import FileTicketStore

from .nobody import NOBODY, as_nobody, need_root, nobody_process


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A directory uid 65534 can reach (pytest's own lies under a 0700 one), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="aqd-tickets-", dir="/tmp"))
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _ticket(i: int) -> SessionTicket:
    now = datetime.datetime.now(datetime.UTC)
    return SessionTicket(age_add=i, cipher_suite=CipherSuite.AES_128_GCM_SHA256,
                         not_valid_after=now + datetime.timedelta(hours=1), not_valid_before=now,
                         resumption_secret=b"S" * 32, server_name="localhost", ticket=b"t%d" % i,
                         max_early_data_size=0xFFFFFFFF, other_extensions=[])


READER = """
d, stop = sys.argv[1], sys.argv[2]
print("ready", flush=True)
reads = tries = 0
for _ in range(2_000_000):  # (bounded; ends when the test has saved)
    if os.path.exists(stop):
        break
    for name in os.listdir(d):
        tries += 1
        try:
            with open(os.path.join(d, name), "rb") as f:
                if f.read():
                    reads += 1
        except OSError:
            pass
print(json.dumps({"reads": reads, "tries": tries}))
"""


async def test_another_user_never_reads_a_ticket_while_it_is_saved(tmp_path: Path) -> None:
    need_root()
    shared = tmp_path / "listable"
    shared.mkdir()
    shared.chmod(0o755)  # (others may list and read what is open to them; only we write)
    stop = tmp_path / "stop"
    store = FileTicketStore(shared / "tickets.cbor")
    async with nobody_process(READER, str(shared), str(stop)) as proc:
        for i in range(600):
            await asyncio.to_thread(store.put, f"localhost@127.0.0.1:{i}", _ticket(i))
        stop.touch()
        assert proc.stdout is not None
        out = await asyncio.wait_for(proc.stdout.read(), 60)
    seen = json.loads(out.decode().splitlines()[-1])
    print(f"\nFIGURES redteam_tickets reader: {seen}")
    assert seen["tries"] > 0 and seen["reads"] == 0
    assert (shared / "tickets.cbor").stat().st_mode & 0o777 == 0o600
    assert store.take("localhost@127.0.0.1:599") is not None


PLANT = """
d, victim = sys.argv[1], sys.argv[2]
for name in ("tickets.cbor.tmp", "tickets.cbor"):
    os.symlink(victim, os.path.join(d, name))
print(json.dumps({"planted": True}))
"""


@pytest.mark.parametrize("mode", [0o777, 0o1777])
async def test_a_link_planted_by_another_user_cannot_redirect_the_store(tmp_path: Path, mode: int) -> None:
    need_root()
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)  # (a directory the other user may write: /tmp-like with the sticky bit, or not)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    assert await as_nobody(PLANT, str(shared), str(victim)) == {"planted": True}
    refused = False
    try:
        FileTicketStore(shared / "tickets.cbor").put("localhost@127.0.0.1:4433", _ticket(1))
    except aqueduct.ConfigError as exc:
        refused = True
        assert "writable by no one else" in str(exc)
    assert victim.read_bytes() == b"precious"
    assert refused


async def test_a_ticket_file_that_is_a_link_or_not_ours_is_refused(tmp_path: Path) -> None:
    need_root()
    (tmp_path / "elsewhere").write_bytes(b"")
    (tmp_path / "link.cbor").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(aqueduct.ConfigError, match="not a regular file"):
        FileTicketStore(tmp_path / "link.cbor")
    theirs = tmp_path / "theirs.cbor"
    theirs.write_bytes(b"")
    os.chown(theirs, NOBODY, NOBODY)
    theirs.chmod(0o600)
    with pytest.raises(aqueduct.ConfigError, match="owned by nobody"):
        FileTicketStore(theirs)
    open_to_all = tmp_path / "open.cbor"
    open_to_all.write_bytes(b"")
    open_to_all.chmod(0o644)
    with pytest.raises(aqueduct.ConfigError, match="open to no one else"):
        FileTicketStore(open_to_all)

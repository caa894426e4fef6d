# A driver directory is where a driver and its clients meet: the lock, the Unix socket clients connect to,
# the counters snapshot, the user's development certificates.  The default, `/tmp/aeron_compat-$USER`, is
# a name any local user can guess and create first; in a directory another user owns (or may write), that
# user can plant a symbolic link the driver then writes through, swap the socket clients connect to, or
# put a CA of their own among the development certificates.  So every directory is taken only if it is
# private: a directory (not a symbolic link), owned by this process's effective user, writable by no one
# else; one that does not exist yet is created with mode 0700.  In a sticky `/tmp` nobody else can then
# rename or replace it, and nothing inside it can change under us.  Files inside are opened with
# O_NOFOLLOW (`open_private`), and a client checks who serves the socket (SO_PEERCRED in driver/proxy.py).
"""Private driver directories: `private_dir` creates or checks one, `UnsafeDirectory` says why not."""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from .codes import AeronError


class UnsafeDirectory(AeronError):
    """A driver directory (or a file in it) another user controls or could control; nothing was written there."""

    def __init__(self, path: Path, why: str, owner: int | None = None) -> None:
        super().__init__(f"{path}: {why}; remove it, or choose another directory (Context.aeron_dir or "
                         f"$AERON_COMPAT_DIR)")
        self.path = path
        """The directory or file refused."""
        self.owner = owner
        """Its owner's uid, when that is why it was refused."""


def user_name(uid: int) -> str:
    """'uid N (name)', or 'uid N' for a uid without a name."""
    try:
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return f"uid {uid}"


def check_private(path: Path, st: os.stat_result, kind: str = "directory") -> None:
    """Raise `UnsafeDirectory` unless `st` (an lstat of `path`) is of this user and writable by no one else."""
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeDirectory(path, f"a symbolic link, not a {kind} (it could lead anywhere)")
    if st.st_uid != os.geteuid():
        raise UnsafeDirectory(path, f"owned by {user_name(st.st_uid)}, not by this user, {user_name(os.geteuid())}",
                              st.st_uid)
    if st.st_mode & 0o022:
        raise UnsafeDirectory(path, f"group or others may write it (mode {stat.S_IMODE(st.st_mode):#o})")


def private_dir(path: Path, create: bool = True) -> Path:
    """`path` as a private directory: created with mode 0700 (missing parents too) if `create` and absent,
    else checked (`UnsafeDirectory` if it is a symbolic link, another user's, or writable by others;
    FileNotFoundError if absent and not `create`)."""
    path = Path(path)
    if create:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    st = os.lstat(path)
    check_private(path, st)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeDirectory(path, "not a directory")
    return path


def open_private(path: Path, flags: int) -> int:
    """os.open a file in a private directory, never through a symbolic link (mode 0600 if created)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if os.path.islink(path):
            raise UnsafeDirectory(path, "a symbolic link, not a file (it could lead anywhere)") from None
        raise exc

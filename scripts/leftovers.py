"""Run a command (the test suite) and fail if it left files outside the clone: `leftovers.py [--watch DIR]... -- CMD`.

Theory of operation. A test or a bench may write only under pytest's temporary directory, the repository's
own ignored folders, or a temporary directory it removes again; anything else it leaves behind is found
here. Before the command runs, the entries directly inside each watched directory are listed: the shared
temporary directory (/tmp, and $TMPDIR when it is another), the home directory, and its cache directory
($XDG_CACHE_HOME, else ~/.cache). After it ends, whatever is new there is a leftover. Another process on the
same machine may be creating files of its own meanwhile (a compiler's temporary file, say): a new entry is
reported only if it is still there a moment later, and `AQUEDUCT_LEFTOVERS=list` (for a shared machine)
lists the leftovers without failing; CI runs alone, so there any leftover fails the run.

Exit status: the command's when it failed; else 1 when it left something (each listed on stderr, with its
owner's likely source: a directory name says which code made it); else 0.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETTLE = 2.0
"""Seconds a new entry must outlive the command to count (another process's transient file does not)."""


def default_watched() -> list[Path]:
    """The shared temporary directory, the home directory and its cache directory (each once, if it exists)."""
    home = Path.home()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache")
    dirs = [Path("/tmp"), Path(tempfile.gettempdir()), home, cache]
    seen: list[Path] = []
    for d in dirs:
        if d.is_dir() and d.resolve() not in [s.resolve() for s in seen]:
            seen.append(d)
    return seen


def snapshot(dirs: list[Path]) -> set[Path]:
    """Every entry directly inside the watched directories."""
    found: set[Path] = set()
    for d in dirs:
        try:
            found.update(d.iterdir())
        except OSError:
            continue
    return found


def new_entries(before: set[Path], dirs: list[Path], settle: float) -> list[Path]:
    """The entries that are new since `before` and still there after `settle` seconds."""
    fresh = snapshot(dirs) - before
    if fresh and settle > 0:
        time.sleep(settle)  # (a leftover stays; another process's transient file is gone by then)
        fresh &= snapshot(dirs)
    return sorted(fresh)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--watch", action="append", type=Path, metavar="DIR",
                    help="a directory to watch (repeatable; default: /tmp, $TMPDIR, $HOME, its cache directory)")
    ap.add_argument("--settle", type=float, default=SETTLE,
                    help=f"seconds a new entry must outlive the command to count (default: {SETTLE})")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no command to run (leftovers.py -- CMD ...)")
    dirs = args.watch or default_watched()
    before = snapshot(dirs)
    status = subprocess.call(command)
    left = new_entries(before, dirs, args.settle)
    if left:
        listing = "\n".join(f"  {p}" for p in left)
        print(f"leftovers: the run left {len(left)} entr{'y' if len(left) == 1 else 'ies'} outside the clone "
              f"(a test or bench must write under pytest's tmp_path or the repository, or remove what it made):\n"
              f"{listing}", file=sys.stderr, flush=True)
    if status != 0:
        return status
    if left and os.environ.get("AQUEDUCT_LEFTOVERS") != "list":
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

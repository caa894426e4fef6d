"""A second local user for attacks that need one: code run as uid/gid 65534 (nobody) in a subprocess.

The test process is root; `as_nobody(code, *args)` starts this interpreter, which imports the standard
library modules the attack needs while still root (the interpreter and site-packages may lie where nobody
cannot read) and then drops to nobody (setgroups, setgid, setuid) before `code` runs, so every system call
of the attack is checked by the kernel against nobody's credentials. The attack prints its findings as one
JSON line last; `as_nobody` returns them parsed. `nobody_process` keeps such a process running (for an
attacker that holds something) until the context ends. Not root: the test is skipped, saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

NOBODY = 65534
GUARD = 60.0
_PRELUDE = ("import errno, json, os, socket, struct, sys, time\n"
            f"os.setgroups([]); os.setgid({NOBODY}); os.setuid({NOBODY})\n"
            f"assert os.getuid() == os.geteuid() == {NOBODY}\n")


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("acting as a second local user (nobody) needs root to switch uid")


async def _start(code: str, *args: str) -> asyncio.subprocess.Process:
    need_root()
    return await asyncio.create_subprocess_exec(sys.executable, "-c", _PRELUDE + code, *args, cwd="/",
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def as_nobody(code: str, *args: str) -> Any:
    """Run `code` (argv: `args`) as nobody to its end; the JSON of its last output line."""
    proc = await _start(code, *args)
    out, err = await asyncio.wait_for(proc.communicate(), GUARD)
    assert proc.returncode == 0, err.decode()
    return json.loads(out.decode().splitlines()[-1])


@contextlib.asynccontextmanager
async def nobody_process(code: str, *args: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """`code` running as nobody until the context ends; entered once it printed its first line (`ready`)."""
    proc = await _start(code, *args)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = await asyncio.wait_for(proc.stdout.readline(), GUARD)
        assert line.startswith(b"ready"), (line, await proc.stderr.read())
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()

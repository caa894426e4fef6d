"""Running a real Aeron peer next to us: the pyaeron environment and its subprocesses.

Theory: pyaeron (the Aeron C client with an embedded C media driver) needs
Python 3.12+, so it lives in its own virtual environment, `.venv-aeron` at
the repository root (or `$AERON_INTEROP_VENV`), created by
`scripts/setup-system.sh aeron` (which runs this file as a script: it needs
only the standard library) from a Python 3.12 interpreter found on PATH, in
pyenv, or via `$AERON_PYTHON`. Tests only look it up (`installed_venv`).
`RealPeer` starts `real_peer.py` there with a JSON role, reads its JSON event
lines on a reader thread, sends it commands, and always kills it on `close`,
removing the driver files it made (its TMPDIR).
"""

from __future__ import annotations

import glob
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

PYAERON_REQUIREMENT = "pyaeron==0.1.0"
REPO = Path(__file__).resolve().parents[2]
PEER_SCRIPT = Path(__file__).with_name("real_peer.py")


SETUP_HINT = "scripts/setup-system.sh aeron"


class InteropUnavailable(RuntimeError):
    """No pyaeron environment (or no Python 3.12+ interpreter to make one with)."""


def _works(python: str) -> bool:
    try:
        out = subprocess.run([python, "-c", "import sys; print(sys.version_info >= (3, 12))"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and out.stdout.strip() == "True"


def find_python312() -> str:
    """A Python 3.12+ interpreter; raises InteropUnavailable if there is none."""
    candidates = [os.environ.get("AERON_PYTHON", ""), shutil.which("python3.12") or "",
                  shutil.which("python3.13") or ""]
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/3.1[2-5]*/bin/python3"))
    for candidate in candidates:
        if candidate and _works(candidate):
            return candidate
    raise InteropUnavailable("no Python 3.12+ interpreter (needed by pyaeron); set AERON_PYTHON to one")


def _venv() -> Path:
    return Path(os.environ.get("AERON_INTEROP_VENV", REPO / ".venv-aeron"))


def installed_venv() -> Path:
    """The interpreter of the pyaeron environment; InteropUnavailable naming the setup command if it is absent."""
    python = _venv() / "bin" / "python"
    if (_venv() / ".pyaeron-installed").exists() and python.exists():
        return python
    raise InteropUnavailable(f"no pyaeron environment in {_venv()} (pyaeron needs its own Python 3.12+ venv); "
                             f"make it with: {SETUP_HINT}")


def ensure_venv() -> Path:
    """The interpreter of the pyaeron environment, creating and installing it the first time."""
    venv = _venv()
    python = venv / "bin" / "python"
    stamp = venv / ".pyaeron-installed"
    if stamp.exists() and python.exists():
        return python
    base = find_python312()
    subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", PYAERON_REQUIREMENT], check=True, timeout=600)
    stamp.write_text(PYAERON_REQUIREMENT + "\n")
    return python


class RealPeer:
    """One real-Aeron subprocess playing a role from real_peer.py."""

    def __init__(self, python: Path, **cfg: Any) -> None:
        self.cfg = cfg
        self.tmp = tempfile.mkdtemp(prefix="aeron-peer-")  # the embedded driver's files, removed on close
        self.proc = subprocess.Popen([str(python), str(PEER_SCRIPT), json.dumps(cfg)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "TMPDIR": self.tmp})
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.log: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        """Queue the peer's lines until EOF; this thread alone closes stdout (a close from another thread while
        it iterates raised `ValueError: I/O operation on closed file` here)."""
        stdout = self.proc.stdout
        assert stdout is not None
        with stdout:
            for line in stdout:
                try:
                    self.events.put(json.loads(line))
                except ValueError:
                    self.events.put({"event": "noise", "line": line})
        self.events.put({"event": "eof"})

    def expect(self, event: str, timeout: float = 20.0) -> dict[str, Any]:
        """Wait for the next `event` line (earlier other events are kept in `log`)."""
        while True:
            try:
                got = self.events.get(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"real peer: no {event!r} within {timeout}s; saw {self.log}") from None
            self.log.append(got)
            if got["event"] == event:
                return got
            if got["event"] == "eof":
                err = self.proc.stderr.read() if self.proc.stderr else ""
                raise RuntimeError(f"real peer exited before {event!r}: {err[-2000:]}")

    def send(self, line: str) -> None:
        """Send a command line."""
        if self.proc.stdin is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.write(line + "\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass

    def close(self, timeout: float = 5.0) -> None:
        """Ask it to exit; kill it if it does not. Its stdout is the reader's to close, once read to EOF: this
        waits up to `timeout` for that, and past it leaves the reader (a daemon) to end when the pipe does."""
        self.send("exit")
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=timeout)
        self._reader.join(timeout)
        for stream in (self.proc.stdin, self.proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> RealPeer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":  # scripts/setup-system.sh: `interop.py --check` looks, `interop.py` installs
    import sys

    try:
        print(installed_venv() if sys.argv[1:] == ["--check"] else ensure_venv())
    except InteropUnavailable as exc:
        print(exc)
        sys.exit(1)

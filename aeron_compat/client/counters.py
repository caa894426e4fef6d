# Counters, as AeronStat shows them: system-wide totals kept by each driver, plus per-stream
# positions (pub-pos, pub-lmt, sub-pos) computed on demand.  A driver writes a JSON snapshot into
# its directory a few times a second so `aeron_compat stat` can read it from another process.
# Thread safety without slowing the hot path: `add` takes a lock; hot paths (offer, poll) write
# plain dict "shards" that one owner updates under its own lock (a log's, a subscription's), and
# `values` sums base + shards.  A closed owner's shard is folded into the base (`retire`).
"""Driver counters and their on-disk snapshot.

publications, exclusive_publications, subscriptions and images count what is open now; the
others are totals since the driver started.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

SYSTEM_COUNTERS = (
    "publications",
    "exclusive_publications",
    "subscriptions",
    "images",
    "images_total",
    "unavailable_images",
    "messages_sent",
    "bytes_sent",
    "bytes_received",
    "back_pressure_events",
    "not_connected_events",
    "admin_actions",
    "nacks",
    "connection_errors",
    "errors",
)
SNAPSHOT_NAME = "counters.json"


def base_dir() -> Path:
    """Where drivers put their directories unless told otherwise (`$AERON_COMPAT_DIR` overrides)."""
    env = os.environ.get("AERON_COMPAT_DIR")
    if env:
        return Path(env)
    user = os.environ.get("USER") or str(os.getuid())
    return Path(tempfile.gettempdir()) / f"aeron_compat-{user}"


def sweep_stale_driver_dirs(base: Path) -> list[Path]:
    """Remove `driver-<pid>-<n>` directories under `base` whose process is gone; return what was removed.

    A driver removes its own directory when it closes; a process that was killed cannot, so the next
    driver to start clears up after it (as Aeron's own driver checks a stale CnC file's liveness)."""
    removed = []
    for path in base.glob("driver-*-*") if base.is_dir() else ():
        try:
            pid = int(path.name.split("-")[1])
        except ValueError:
            continue
        if pid == os.getpid() or _alive(pid):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


class Counters:
    """System counters of one driver, safe to update from any thread (`add`, or an owned `shard`)."""

    def __init__(self) -> None:
        self._base: dict[str, int] = dict.fromkeys(SYSTEM_COUNTERS, 0)
        self._shards: list[dict[str, int]] = []
        self._lock = threading.Lock()

    def add(self, name: str, n: int = 1) -> None:
        """Increase a counter (locked: for paths that are not per-message)."""
        with self._lock:
            self._base[name] += n

    def shard(self) -> dict[str, int]:
        """A zeroed dict counted in `values`; its owner must serialise its own writes."""
        shard = dict.fromkeys(SYSTEM_COUNTERS, 0)
        with self._lock:
            self._shards.append(shard)
        return shard

    def retire(self, shard: dict[str, int]) -> None:
        """Fold a closed owner's shard into the totals."""
        with self._lock:
            if any(s is shard for s in self._shards):
                self._shards = [s for s in self._shards if s is not shard]
                for name, value in shard.items():
                    self._base[name] += value

    @property
    def values(self) -> dict[str, int]:
        """All counters (a fresh dict: writing to it changes nothing)."""
        with self._lock:
            out = dict(self._base)
            for shard in self._shards:
                for name, value in shard.items():
                    out[name] += value
        return out

    def get(self, name: str) -> int:
        """A counter's value."""
        return self.values[name]


def write_snapshot(directory: Path, snapshot: dict[str, Any]) -> None:
    """Atomically replace the snapshot file in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".counters")
    with os.fdopen(fd, "w") as f:
        json.dump(snapshot, f)
    os.replace(tmp, directory / SNAPSHOT_NAME)


def read_snapshots(root: Path) -> list[dict[str, Any]]:
    """Snapshots of every driver directory under `root` (or of `root` itself), live processes only."""
    files = [root / SNAPSHOT_NAME] if (root / SNAPSHOT_NAME).exists() else sorted(root.glob(f"*/{SNAPSHOT_NAME}"))
    out = []
    for path in files:
        try:
            snap = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if _alive(int(snap.get("pid", 0))):
            out.append(snap)
    return out


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

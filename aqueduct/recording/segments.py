"""Segment files: written under a hidden temporary name, published by an atomic rename.

A segment is one Parquet file. While open it is `.NAME.parquet.tmp` (a
leading dot: readers and Spark skip it); `seal()` closes the Parquet footer,
fsyncs the file, renames it to `NAME.parquet` and fsyncs the directory. A
reader therefore only ever sees complete files, and a crash loses only the
segment that was open. Rotation (by bytes written or by age) is the
caller's decision, through `size` and `age`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from .schema import SCHEMA

SUFFIX = ".parquet"
TMP_SUFFIX = ".parquet.tmp"


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class OpenSegment:
    """One segment being written: append tables as row groups, then seal."""

    def __init__(self, directory: Path, name: str, compression: str = "snappy") -> None:
        self.final = directory / f"{name}{SUFFIX}"
        self.tmp = directory / f".{name}{TMP_SUFFIX}"
        self.opened = time.monotonic()
        self._file: BinaryIO = open(self.tmp, "wb")  # closed by seal()
        self._writer = pq.ParquetWriter(self._file, SCHEMA, compression=compression)
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        """Append one row group."""
        self._writer.write_table(table)
        self.rows += table.num_rows

    @property
    def size(self) -> int:
        """Bytes written so far."""
        return self._file.tell()

    @property
    def age(self) -> float:
        """Seconds since the segment was opened."""
        return time.monotonic() - self.opened

    def seal(self) -> Path:
        """Finish the file and publish it under its final name."""
        self._writer.close()
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        os.replace(self.tmp, self.final)
        _fsync_dir(self.final.parent)
        return self.final


def sealed_segments(directory: str | os.PathLike[str]) -> list[Path]:
    """The published segments of a recording directory, in name (= time, per recorder) order."""
    root = Path(directory)
    return sorted(p for p in root.iterdir() if p.name.endswith(SUFFIX) and not p.name.startswith((".", "_")))

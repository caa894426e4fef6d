"""Reading a recording directory back: sealed segments only, concatenated in order.

Every segment is checked first from its footer (`segment_problem`): a bad one
stops the read with one line naming the file and what is wrong, or with
`skip_bad` is left out and reported (`check_segments`).

Segments still open (hidden `.tmp` names) are never read. Rows come back in
segment order, and within a segment in the order they were recorded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .schema import METADATA_KEY, READABLE_VERSIONS, SCHEMA
from .segments import sealed_segments


class RecordingError(Exception):
    """A recording directory or segment is unusable."""


@dataclass(frozen=True, slots=True)
class BadSegment:
    """A file in a recording directory that is not a readable segment, and why (one line)."""

    path: Path
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def segment_problem(path: str | os.PathLike[str]) -> str | None:
    """What is wrong with a segment, from its Parquet footer alone (no data read); None if it looks right.

    Catches a truncated or corrupt footer, a format version this reader does not know, and a Parquet file of
    another schema (no version key, or columns that are not the recording's). Damage inside data pages shows
    only when they are read (then `read_segment` names the file)."""
    try:
        meta = pq.ParquetFile(path)
        schema = meta.schema_arrow
    except (OSError, pa.ArrowException) as exc:
        return f"not a readable Parquet file ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    version = (schema.metadata or {}).get(METADATA_KEY)
    if version is None:
        return f"not an aqueduct recording segment (no {METADATA_KEY.decode()} in its metadata)"
    text = version.decode(errors="replace")
    if text not in READABLE_VERSIONS:
        return f"recording format {text!r}, this aqueduct reads {', '.join(READABLE_VERSIONS)}"
    for field in schema:
        want = SCHEMA.field(field.name) if field.name in SCHEMA.names else None
        if want is None or not want.type.equals(field.type):
            return f"column {field.name} ({field.type}) is not the recording schema's"
    return None


def check_segments(
    directory: str | os.PathLike[str], skip_bad: bool = False
) -> tuple[list[Path], list[BadSegment]]:
    """(good segments, bad ones) of a recording directory. Without `skip_bad`, the first bad one raises
    RecordingError with one line naming the file and the problem."""
    good: list[Path] = []
    bad: list[BadSegment] = []
    for path in sealed_segments(directory):
        problem = segment_problem(path)
        if problem is None:
            good.append(path)
            continue
        if not skip_bad:
            raise RecordingError(f"{path}: {problem}")
        bad.append(BadSegment(path, problem))
    return good, bad


def read_segment(path: str | os.PathLike[str], columns: list[str] | None = None) -> pa.Table:
    """One segment as a table, checking its format version."""
    try:
        table = pq.read_table(path, columns=columns)
    except (OSError, pa.ArrowException) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RecordingError(f"{path}: unreadable segment ({first})") from exc
    problem = segment_problem(path)
    if problem is not None:
        raise RecordingError(f"{path}: {problem}")
    for field in SCHEMA:  # (an older version's missing columns read as null)
        if field.name not in table.column_names and (columns is None or field.name in columns):
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    if columns is None:
        table = table.select(list(SCHEMA.names))
    return table


def read_recording(
    directory: str | os.PathLike[str], columns: list[str] | None = None, skip_bad: bool = False
) -> pa.Table:
    """Every sealed segment of a recording directory as one table (`skip_bad`: leave out bad segments)."""
    paths, _bad = check_segments(directory, skip_bad)
    if not paths:
        return SCHEMA.empty_table() if columns is None else SCHEMA.empty_table().select(columns)
    return pa.concat_tables([read_segment(p, columns) for p in paths])


def read_events(directory: str | os.PathLike[str], skip_bad: bool = False) -> list[dict[str, Any]]:
    """Every event of a recording as a dict of column values."""
    events: list[dict[str, Any]] = read_recording(directory, skip_bad=skip_bad).to_pylist()
    return events

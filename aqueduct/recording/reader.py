"""Reading a recording directory back: sealed segments only, concatenated in order.

Segments still open (hidden `.tmp` names) are never read. Rows come back in
segment order, and within a segment in the order they were recorded.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .schema import METADATA_KEY, READABLE_VERSIONS, SCHEMA
from .segments import sealed_segments


class RecordingError(Exception):
    """A recording directory or segment is unusable."""


def read_segment(path: str | os.PathLike[str], columns: list[str] | None = None) -> pa.Table:
    """One segment as a table, checking its format version."""
    try:
        table = pq.read_table(path, columns=columns)
    except (OSError, pa.ArrowException) as exc:
        raise RecordingError(f"unreadable segment {path}: {exc}") from exc
    version = (table.schema.metadata or {}).get(METADATA_KEY)
    if version is None or version.decode(errors="replace") not in READABLE_VERSIONS:
        raise RecordingError(f"segment {path} has recording format {version!r}, expected one of {READABLE_VERSIONS}")
    for field in SCHEMA:  # (an older version's missing columns read as null)
        if field.name not in table.column_names and (columns is None or field.name in columns):
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    if columns is None:
        table = table.select(list(SCHEMA.names))
    return table


def read_recording(directory: str | os.PathLike[str], columns: list[str] | None = None) -> pa.Table:
    """Every sealed segment of a recording directory as one table."""
    paths = sealed_segments(directory)
    if not paths:
        return SCHEMA.empty_table() if columns is None else SCHEMA.empty_table().select(columns)
    return pa.concat_tables([read_segment(p, columns) for p in paths])


def read_events(directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every event of a recording as a dict of column values."""
    events: list[dict[str, Any]] = read_recording(directory).to_pylist()
    return events

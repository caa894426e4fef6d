"""The recording's event schema: one flat Parquet table, one row per event.

Every event has `time_ns` (wall clock, so recordings of two processes line
up), `kind` and `connection`; the other columns are filled where the kind
gives them meaning and null elsewhere (see specs/RECORDING.md). The hot path
builds rows as plain tuples in `COLUMNS` order; `SCHEMA` types them once a
batch reaches the writer thread.
"""

from __future__ import annotations

from enum import StrEnum

import pyarrow as pa

from ..errors import EndReason

FORMAT_VERSION = "2"
"""Stored in each segment's key-value metadata under `METADATA_KEY`."""
READABLE_VERSIONS = ("1", "2")
"""Versions readers accept: version 1 lacks the `link` and `host` columns (read as null)."""
METADATA_KEY = b"aqueduct.recording.version"


class Kind(StrEnum):
    """What a row records."""

    CONNECTION_OPENED = "connection_opened"
    CONNECTION_CLOSED = "connection_closed"
    CONNECTION_STATS = "connection_stats"
    MESSAGE_SENT = "message_sent"
    MESSAGE_RECEIVED = "message_received"
    ACKED = "acked"
    NACKED = "nacked"
    CHANNEL_CREATED = "channel_created"
    CHANNEL_FINISHED = "channel_finished"
    CHANNEL_CANCELLED = "channel_cancelled"
    CHANNEL_LOST = "channel_lost"
    RECEIVER_DROPPED = "receiver_dropped"
    CHANNEL_CLOSED = "channel_closed"
    CHANNEL_CONNECTION_LOST = "channel_connection_lost"


END_KIND: dict[EndReason, Kind] = {
    EndReason.FINISHED: Kind.CHANNEL_FINISHED,
    EndReason.CANCELLED: Kind.CHANNEL_CANCELLED,
    EndReason.LOST: Kind.CHANNEL_LOST,
    EndReason.RECEIVER_DROPPED: Kind.RECEIVER_DROPPED,
    EndReason.CLOSED: Kind.CHANNEL_CLOSED,
    EndReason.CONNECTION_LOST: Kind.CHANNEL_CONNECTION_LOST,
}
"""The row kind for each way a channel half ends."""

END_KINDS: frozenset[str] = frozenset(k.value for k in END_KIND.values())

SCHEMA = pa.schema(
    [
        pa.field("time_ns", pa.int64(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("connection", pa.string(), nullable=False),
        pa.field("channel", pa.int64()),
        pa.field("direction", pa.string()),
        pa.field("delivery", pa.string()),
        pa.field("number", pa.int64()),
        pa.field("length", pa.int64()),
        pa.field("attachments", pa.list_(pa.int64())),
        pa.field("payload", pa.binary()),
        pa.field("latency_ns", pa.int64()),
        pa.field("parent", pa.int64()),
        pa.field("detail", pa.string()),
        pa.field("rtt_us", pa.float64()),
        pa.field("cwnd", pa.int64()),
        pa.field("bytes_in_flight", pa.int64()),
        pa.field("packets_lost", pa.int64()),
        pa.field("link", pa.string()),
        pa.field("host", pa.string()),
    ],
    metadata={METADATA_KEY: FORMAT_VERSION.encode()},
)

COLUMNS: tuple[str, ...] = tuple(SCHEMA.names)
"""Column order of a row tuple."""

Row = tuple[object, ...]
"""One event as a tuple in `COLUMNS` order."""

OUT = "out"
"""`direction` of what this side sends (and of a channel half it holds the sender of)."""
IN = "in"
"""`direction` of what this side receives."""
RELIABLE = "reliable"
"""`delivery` of a reliable message on the receiving side: the wire does not say ordered or unordered."""


def make_row(time_ns: int, kind: Kind | str, connection: str, **fields: object) -> Row:
    """A row from keyword fields (not for the hot path: tests, tools, generators)."""
    unknown = set(fields) - set(COLUMNS)
    if unknown:
        raise ValueError(f"unknown recording columns: {sorted(unknown)}")
    values: dict[str, object] = {"time_ns": time_ns, "kind": Kind(kind).value, "connection": connection, **fields}
    return tuple(values.get(name) for name in COLUMNS)


_ROW_TYPE = pa.struct(list(SCHEMA))


def rows_to_table(rows: list[Row]) -> pa.Table:
    """Type a batch of row tuples as a table of `SCHEMA` (one C-level pass through a struct array)."""
    table = pa.Table.from_struct_array(pa.array(rows, type=_ROW_TYPE))
    return table.replace_schema_metadata(SCHEMA.metadata)

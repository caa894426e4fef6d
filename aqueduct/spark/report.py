"""The printed report of `aqueduct analyze`: a few result tables as aligned text.

Each section names a table, the columns to show and how many rows; numbers
are formatted by type (counts with thousands separators, rates and
milliseconds with a few significant digits).
"""

from __future__ import annotations

import pyarrow as pa

SECTIONS: list[tuple[str, str, list[str], int]] = [
    ("summary", "Recording", ["events", "connections", "channels", "messages", "bytes", "span_s"], 1),
    ("by_delivery", "Per delivery mode", ["delivery", "direction", "messages", "bytes", "msgs_per_s", "acked",
                                          "nacked", "nack_rate", "loss_rate", "p50_ms", "p99_ms", "p999_ms",
                                          "percentiles"], 20),
    ("by_connection", "Per connection", ["connection", "direction", "messages", "bytes", "msgs_per_s", "nack_rate",
                                         "p50_ms", "p99_ms", "p999_ms", "percentiles"], 20),
    ("flows", "Per connection, channel and delivery mode (first rows)", ["connection", "channel", "delivery",
                                                                        "direction", "messages", "bytes",
                                                                        "msgs_per_s", "nack_rate", "p50_ms",
                                                                        "p99_ms", "percentiles"], 20),
    ("top_channels", "Top channels by bytes", ["connection", "channel", "delivery", "messages", "bytes",
                                               "lifetime_s", "end_state", "depth", "fanout"], 10),
    ("trees", "Attachment trees", ["connection", "channels", "roots", "max_depth", "max_fanout", "mean_fanout"], 20),
    ("paired_channels", "Channels recorded on both sides (each message once)", ["link", "channel", "sender",
                                                                              "delivery", "sent", "delivered",
                                                                              "cancelled", "lost_nacked",
                                                                              "lost_in_transit",
                                                                              "in_flight_at_end", "one_way_p50_ms",
                                                                              "one_way_p99_ms"], 20),
    ("connection_stats", "Connections", ["connection", "opened_as", "samples", "rtt_p50_us", "rtt_max_us", "cwnd_mean",
                                              "bytes_in_flight_max", "packets_lost"], 20),
]  # fmt: skip


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)


def table_text(table: pa.Table, columns: list[str], limit: int) -> str:
    """Aligned text of the first `limit` rows of `columns`."""
    columns = [c for c in columns if c in table.column_names]
    rows = [[_fmt(v) for v in row.values()] for row in table.select(columns).slice(0, limit).to_pylist()]
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    if table.num_rows > limit:
        lines.append(f"... {table.num_rows - limit} more rows")
    return "\n".join(lines)


_PERCENTILES = (
    "p50/p99/p999_ms: ack latency percentiles (nearest rank). percentiles: exact, or approx ±N ranks "
    "(Spark's percentile_approx at accuracy 10,000 is off by at most samples/10,000 ranks)."
)
NOTES: dict[str, list[str]] = {
    "paired_channels": [
        "Both sides of a connection (one link) matched per message: delivered = taken by the receiving application;"
        " cancelled = its channel was cancelled (not a loss); lost_nacked = the sender was told it was lost;"
        " lost_in_transit = the channel or connection ended without it; in_flight_at_end = under way when the "
        "recording ends. one_way_*: receive minus send time, only with both sides on one host (one clock). "
        "The per-side tables above count a message once per recorded side.",
    ],
    "by_delivery": [_PERCENTILES],
    "by_connection": [_PERCENTILES],
    "flows": [_PERCENTILES],
    "connection_stats": [
        "packets_lost: QUIC packets this endpoint declared lost over the connection (the sum of the increases of "
        "its cumulative counter between samples, from 0 at the start; a drop counts as a restart). QUIC resends what "
        "a lost packet carried: it is not a lost message.",
    ],
}
"""Lines printed under a section: what its figures mean."""


def render(tables: dict[str, pa.Table]) -> str:
    """The whole report."""
    parts = []
    for name, title, columns, limit in SECTIONS:
        if name in tables:
            notes = "".join(f"\n  {line}" for line in NOTES.get(name, ()))
            parts.append(f"== {title} ==\n{table_text(tables[name], columns, limit)}{notes}")
    return "\n\n".join(parts)

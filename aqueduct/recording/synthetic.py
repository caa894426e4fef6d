"""Synthetic recordings for tests and benchmarks, generated with numpy, written as real segments.

Each connection has `channels` channels forming a random recursive tree
(channel k > 0 was attached to message 0 of a random earlier channel).
Even-indexed channels are outgoing (message_sent plus one acked or nacked
row per message, lost with probability `loss`); odd ones are incoming
(message_received only, `reliable` for stream modes, as a receiving side
records them). Delivery modes cycle ordered, unordered, unreliable. Channel ends, connection stats (every second) and
open/close rows complete the picture. Output goes through `OpenSegment`,
so the files are exactly what a Recorder writes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from .schema import RELIABLE, SCHEMA, Kind
from .segments import OpenSegment

DELIVERIES = ("ordered", "unordered", "unreliable")
END_STATES = (Kind.CHANNEL_FINISHED, Kind.CHANNEL_CANCELLED, Kind.CHANNEL_LOST, Kind.RECEIVER_DROPPED)
END_WEIGHTS = (0.85, 0.07, 0.04, 0.04)
START_NS = 1_700_000_000_000_000_000


@dataclass(frozen=True)
class SyntheticSpec:
    """What to generate."""

    connections: int = 2
    channels: int = 6
    messages: int = 100
    """Messages per channel."""
    loss: float = 0.02
    rate: float = 20_000.0
    """Mean messages per second on a channel."""
    payload_mean: int = 200
    seed: int = 0
    rows_per_segment: int = 2_000_000


def _column_table(cols: dict[str, object], n: int) -> pa.Table:
    arrays = []
    for field in SCHEMA:
        value = cols.get(field.name)
        if value is None:
            arrays.append(pa.nulls(n, type=field.type))
        elif isinstance(value, str):
            arrays.append(pa.array(np.full(n, value, dtype=object), type=field.type))
        else:
            arrays.append(pa.array(value, type=field.type))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def _connection_tables(spec: SyntheticSpec, index: int, rng: np.random.Generator) -> list[pa.Table]:
    conn = f"conn-{index:04d}"
    t0 = START_NS + index * 1_000_000
    ids = np.arange(spec.channels, dtype=np.int64) * 4 + 2
    parents = np.array([-1] + [int(rng.integers(0, k)) for k in range(1, spec.channels)], dtype=np.int64)
    tables: list[pa.Table] = []
    end_time = t0
    ctl_t: list[int] = [t0]
    ctl_kind: list[str] = [Kind.CONNECTION_OPENED.value]
    ctl_chan: list[int | None] = [None]
    ctl_dir: list[str | None] = [None]
    ctl_parent: list[int | None] = [None]
    ctl_detail: list[str | None] = ["client 127.0.0.1:4433"]
    m = spec.messages
    for k in range(spec.channels):
        outgoing = k % 2 == 0
        delivery = DELIVERIES[k % 3]
        start = t0 + int(rng.integers(0, 1_000_000))
        times = start + np.cumsum(rng.exponential(1e9 / spec.rate, m)).astype(np.int64)
        lengths = rng.poisson(spec.payload_mean, m).astype(np.int64)
        children = [int(ids[c]) for c in np.nonzero(parents == k)[0]]
        offsets = np.full(m + 1, len(children), dtype=np.int32)  # message 0 carries every child, the rest none
        offsets[0] = 0
        att = pa.ListArray.from_arrays(pa.array(offsets), pa.array(children, type=pa.int64()))
        cols: dict[str, object] = {
            "time_ns": times,
            "kind": (Kind.MESSAGE_SENT if outgoing else Kind.MESSAGE_RECEIVED).value,
            "connection": conn,
            "channel": np.full(m, ids[k]),
            "direction": "out" if outgoing else "in",
            "delivery": delivery if outgoing or delivery == "unreliable" else RELIABLE,  # (what a receiver knows)
            "number": np.arange(m, dtype=np.int64),
            "length": lengths,
        }
        table = _column_table(cols, m)
        table = table.set_column(SCHEMA.get_field_index("attachments"), "attachments", att)
        tables.append(table)
        last = int(times[-1]) if m else start
        if outgoing and m:
            lost = rng.random(m) < spec.loss
            latency = rng.lognormal(np.log(1e6), 0.5, m).astype(np.int64)
            outcome = {
                "time_ns": times + latency,
                "kind": pa.array(np.where(lost, Kind.NACKED.value, Kind.ACKED.value)),
                "connection": conn,
                "channel": np.full(m, ids[k]),
                "direction": "out",
                "delivery": delivery,
                "number": np.arange(m, dtype=np.int64),
                "latency_ns": latency,
            }
            tables.append(_column_table(outcome, m))
            last = max(last, int((times + latency).max()))
        if k:
            ctl_t.append(start - 1000)
            ctl_kind.append(Kind.CHANNEL_CREATED.value)
            ctl_chan.append(int(ids[k]))
            ctl_dir.append("out" if outgoing else "in")
            ctl_parent.append(int(ids[parents[k]]))
            ctl_detail.append(None)
        end_kind = END_STATES[int(rng.choice(len(END_STATES), p=END_WEIGHTS))]
        ctl_t.append(last + 1000)
        ctl_kind.append(end_kind.value)
        ctl_chan.append(int(ids[k]))
        ctl_dir.append("out" if outgoing else "in")
        ctl_parent.append(None)
        ctl_detail.append(None)
        end_time = max(end_time, last + 1000)
    stat_times = np.arange(t0, end_time, 1_000_000_000, dtype=np.int64)
    s = len(stat_times)
    stats = {
        "time_ns": stat_times,
        "kind": Kind.CONNECTION_STATS.value,
        "connection": conn,
        "rtt_us": rng.normal(900.0, 50.0, s),
        "cwnd": rng.integers(12_000, 200_000, s),
        "bytes_in_flight": rng.integers(0, 12_000, s),
        "packets_lost": np.cumsum(rng.poisson(2, s)),
    }
    tables.append(_column_table(stats, s))
    ctl_t.append(end_time + 1000)
    ctl_kind.append(Kind.CONNECTION_CLOSED.value)
    ctl_chan.append(None)
    ctl_dir.append(None)
    ctl_parent.append(None)
    ctl_detail.append("local: done")
    control = {
        "time_ns": np.array(ctl_t, dtype=np.int64),
        "kind": pa.array(ctl_kind),
        "connection": conn,
        "channel": pa.array(ctl_chan, type=pa.int64()),
        "direction": pa.array(ctl_dir, type=pa.string()),
        "parent": pa.array(ctl_parent, type=pa.int64()),
        "detail": pa.array(ctl_detail, type=pa.string()),
    }
    tables.append(_column_table(control, len(ctl_t)))
    return tables


def generate(directory: str | os.PathLike[str], spec: SyntheticSpec = SyntheticSpec()) -> int:
    """Write a synthetic recording into `directory`; returns the number of events."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(spec.seed)
    total = 0
    seq = 0
    segment: OpenSegment | None = None
    for c in range(spec.connections):
        for table in _connection_tables(spec, c, rng):
            if segment is None:
                segment = OpenSegment(root, f"rec-synthetic-{spec.seed}-{seq:06d}")
                seq += 1
            segment.write(table)
            total += table.num_rows
            if segment.rows >= spec.rows_per_segment:
                segment.seal()
                segment = None
    if segment is not None:
        segment.seal()
    return total


def spec_for_events(events: int, loss: float = 0.01, seed: int = 1) -> SyntheticSpec:
    """A spec of about `events` rows: 10 connections of 20 channels (even: sent + outcome rows, odd: received)."""
    connections, channels = 10, 20
    messages = max(1, round(events / (connections * channels * 1.5)))
    return SyntheticSpec(connections=connections, channels=channels, messages=messages, loss=loss, seed=seed)


def main(argv: list[str] | None = None) -> int:
    """`python -m aqueduct.recording.synthetic DIR --events N`: write a synthetic recording of about N events."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m aqueduct.recording.synthetic", description=main.__doc__)
    parser.add_argument("directory")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--loss", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    total = generate(args.directory, spec_for_events(args.events, args.loss, args.seed))
    print(f"wrote {total} events into {args.directory}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The Spark side of `aqueduct analyze`: a recording loaded as a DataFrame, and each aggregation over it.

`load_events` reads a recording's sealed segments with an explicit schema
(payloads left out); every other function maps DataFrames to a DataFrame,
lazily: nothing runs until the caller (analyze.py, or `--sql` through
`views`) collects a result as Arrow. The flow tables of every grouping are
computed together in one grouping-sets pass (`flow_metrics`), with
approximate ack-latency percentiles; `paired_channels` joins both sides'
recordings of one connection by its shared link id. Column meanings are in
specs/RECORDING.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from aqueduct.recording.schema import END_KINDS, Kind

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


QUANTILES = (0.5, 0.99, 0.999)
LATENCY_COLUMNS = ("p50_ms", "p99_ms", "p999_ms")
PERCENTILE_ACCURACY = 10_000
HIST_BINS_PER_DECADE = 20
MESSAGE_KINDS = (Kind.MESSAGE_SENT.value, Kind.MESSAGE_RECEIVED.value)
OUTCOME_KINDS = (Kind.ACKED.value, Kind.NACKED.value)
EVENT_COLUMNS = [
    "time_ns", "kind", "connection", "channel", "direction", "delivery", "number", "length", "attachments",
    "latency_ns",
    "parent", "detail", "rtt_us", "cwnd", "bytes_in_flight", "packets_lost", "link", "host",
]  # fmt: skip
CORE_COLUMNS = ["time_ns", "kind", "connection", "channel", "direction", "delivery", "length", "latency_ns"]
"""What most aggregations need (Parquet reads only these columns). Not cached: measured, a cache costs more to
build than the seven scans it saves."""


def spark_schema() -> str:
    """The recording schema as a Spark DDL string (an explicit schema: a version-1 segment's missing columns read
    as null, and Spark does not sample files to infer one)."""
    from aqueduct.recording.schema import SCHEMA

    names = {pa.int64(): "BIGINT", pa.string(): "STRING", pa.float64(): "DOUBLE", pa.binary(): "BINARY",
             pa.list_(pa.int64()): "ARRAY<BIGINT>"}  # fmt: skip
    return ", ".join(f"`{f.name}` {names[f.type]}" for f in SCHEMA)


def load_events(spark: SparkSession, path: str | list[str]) -> DataFrame:
    """The recording's sealed segments (a directory, or a list of segment files), without payloads."""
    paths = [path] if isinstance(path, str) else path
    reader = spark.read.schema(spark_schema()).option("pathGlobFilter", "*.parquet")
    return reader.parquet(*paths).select(*EVENT_COLUMNS)


FLOW_KEYS = ["connection", "channel", "delivery", "direction"]
FLOW_TABLES: dict[str, tuple[str, ...]] = {
    "flows": ("connection", "channel", "delivery", "direction"),
    "by_connection": ("connection", "direction"),
    "by_delivery": ("delivery", "direction"),
}
"""The flow tables and their grouping keys: computed together in one pass (grouping sets)."""


def _grouping_id(keys: Sequence[str]) -> int:
    """Spark's grouping_id for a grouping set over FLOW_KEYS: one bit per key left out, first key highest."""
    return sum(1 << (len(FLOW_KEYS) - 1 - i) for i, k in enumerate(FLOW_KEYS) if k not in keys)


def flow_metrics(core: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(counts, latencies) for every grouping of FLOW_TABLES, in two grouping-sets passes.

    Counts: messages, bytes, throughput, acked, nacked and the rates. Latencies: ack-latency percentiles over
    acked rows only (one pass with a conditional percentile over every row costs about three times more).
    Column `gid` tells the grouping (see `_grouping_id`); keys outside a row's grouping are null.
    """
    from pyspark.sql import functions as F

    kind = F.col("kind")
    is_msg = kind.isin(*MESSAGE_KINDS)
    sets = [list(keys) for keys in FLOW_TABLES.values()]
    counts = (
        core.filter(kind.isin(*MESSAGE_KINDS, *OUTCOME_KINDS))
        .groupingSets(sets, *FLOW_KEYS)
        .agg(
            F.grouping_id().alias("gid"),
            F.count(F.when(is_msg, 1)).alias("messages"),
            F.coalesce(F.sum(F.when(is_msg, F.col("length"))), F.lit(0)).alias("bytes"),
            F.min(F.when(is_msg, F.col("time_ns"))).alias("first_ns"),
            F.max(F.when(is_msg, F.col("time_ns"))).alias("last_ns"),
            F.count(F.when(kind == Kind.ACKED.value, 1)).alias("acked"),
            F.count(F.when(kind == Kind.NACKED.value, 1)).alias("nacked"),
        )
    )
    span = (F.col("last_ns") - F.col("first_ns")) / 1e9
    sent = F.when((F.col("direction") == "out") & (F.col("messages") > 0), F.col("messages"))
    counts = counts.select(
        F.col("gid").cast("int").alias("gid"),
        *FLOW_KEYS,
        "messages",
        "bytes",
        "first_ns",
        "last_ns",
        F.when(span > 0, span).alias("span_s"),
        F.when(span > 0, F.col("messages") / span).alias("msgs_per_s"),
        F.when(span > 0, F.col("bytes") / span).alias("bytes_per_s"),
        "acked",
        "nacked",
        (F.col("nacked") / sent).alias("nack_rate"),
        ((sent - F.col("acked")) / sent).alias("loss_rate"),
    )
    latencies = (
        core.filter((kind == Kind.ACKED.value) & F.col("latency_ns").isNotNull())
        .groupingSets(sets, *FLOW_KEYS)
        .agg(
            F.grouping_id().alias("gid"),
            F.count(F.lit(1)).alias("latency_samples"),
            F.percentile_approx("latency_ns", list(QUANTILES), PERCENTILE_ACCURACY).alias("lat"),
        )
        .select(
            F.col("gid").cast("int").alias("gid"),
            *FLOW_KEYS,
            "latency_samples",
            *[(F.col("lat")[i] / 1e6).alias(name) for i, name in enumerate(LATENCY_COLUMNS)],
        )
    )
    return counts, latencies


def percentile_label(samples: int) -> str:
    """How exact the percentiles over `samples` latencies are: Spark's percentile_approx is off by at most
    samples / PERCENTILE_ACCURACY ranks, so up to PERCENTILE_ACCURACY samples it is the exact nearest-rank
    percentile (the smallest sample with at least q of all samples at or below it)."""
    if samples <= PERCENTILE_ACCURACY:
        return "exact"
    return f"approx ±{math.ceil(samples / PERCENTILE_ACCURACY)} ranks"


def split_flows(counts: pa.Table, latencies: pa.Table) -> dict[str, pa.Table]:
    """The grouping-sets results as the FLOW_TABLES, each with only its keys, latencies joined, sorted by keys."""
    out = {}
    for name, keys in FLOW_TABLES.items():
        gid = _grouping_id(keys)
        dropped = ["gid", *(k for k in FLOW_KEYS if k not in keys)]
        part = counts.filter(pc.equal(counts["gid"], gid)).drop_columns(dropped)
        lat = latencies.filter(pc.equal(latencies["gid"], gid)).drop_columns(dropped)
        part = part.join(lat, list(keys), join_type="left outer")
        samples = [n or 0 for n in part["latency_samples"].to_pylist()]
        part = part.set_column(
            part.schema.get_field_index("latency_samples"), "latency_samples", pa.array(samples, pa.int64())
        ).append_column("percentiles", pa.array([percentile_label(n) if n else None for n in samples], pa.string()))
        out[name] = part.take(pc.sort_indices(part, [(k, "ascending") for k in keys]))
    return out


def channel_lifetimes(events: DataFrame) -> DataFrame:
    """Per channel: start, end, lifetime, end state (`open` if none recorded), messages and bytes."""
    from pyspark.sql import functions as F

    kind = F.col("kind")
    is_msg = kind.isin(*MESSAGE_KINDS)
    first_end = F.min(F.when(kind.isin(*END_KINDS), F.struct(F.col("time_ns"), kind.alias("state"))))
    agg = (
        events.filter(F.col("channel").isNotNull())
        .groupBy("connection", "channel")
        .agg(
            F.min("time_ns").alias("first_ns"),
            F.min(F.when(kind == Kind.CHANNEL_CREATED.value, F.col("time_ns"))).alias("created_ns"),
            first_end.alias("end"),
            F.count(F.when(is_msg, 1)).alias("messages"),
            F.coalesce(F.sum(F.when(is_msg, F.col("length"))), F.lit(0)).alias("bytes"),
            F.array_join(F.array_sort(F.collect_set(F.when(is_msg, F.col("delivery")))), ",").alias("delivery"),
        )
    )
    start = F.coalesce(F.col("created_ns"), F.col("first_ns"))
    return agg.select(
        "connection",
        "channel",
        "delivery",
        start.alias("start_ns"),
        F.col("end.time_ns").alias("end_ns"),
        ((F.col("end.time_ns") - start) / 1e9).alias("lifetime_s"),
        F.coalesce(F.col("end.state"), F.lit("open")).alias("end_state"),
        "messages",
        "bytes",
    ).orderBy("connection", "channel")


def attachment_edges(events: DataFrame) -> DataFrame:
    """(connection, parent, child): from message attachments and from channel_created parents."""
    from pyspark.sql import functions as F

    carried = events.filter(F.col("kind").isin(*MESSAGE_KINDS) & (F.size("attachments") > 0)).select(
        "connection", F.col("channel").alias("parent"), F.explode("attachments").alias("child")
    )
    created = events.filter((F.col("kind") == Kind.CHANNEL_CREATED.value) & F.col("parent").isNotNull()).select(
        "connection", "parent", F.col("channel").alias("child")
    )
    return carried.unionByName(created).distinct()


def timeline(events: DataFrame, t0: int, width_ns: int) -> DataFrame:
    """Messages and bytes per time bucket and direction."""
    from pyspark.sql import functions as F

    bucket = F.floor((F.col("time_ns") - F.lit(t0)) / F.lit(width_ns)).cast("long")
    return (
        events.filter(F.col("kind").isin(*MESSAGE_KINDS))
        .groupBy(bucket.alias("bucket"), "direction")
        .agg(F.count(F.lit(1)).alias("messages"), F.coalesce(F.sum("length"), F.lit(0)).alias("bytes"))
        .select(
            (F.col("bucket") * width_ns / 1e9).alias("t_s"),
            F.lit(width_ns / 1e9).alias("width_s"),
            "direction",
            (F.col("messages") / (width_ns / 1e9)).alias("msgs_per_s"),
            (F.col("bytes") / (width_ns / 1e9)).alias("bytes_per_s"),
        )
        .orderBy("t_s", "direction")
    )


def latency_histogram(events: DataFrame) -> DataFrame:
    """Ack latencies per delivery mode in log-spaced bins (`HIST_BINS_PER_DECADE` per decade of microseconds)."""
    from pyspark.sql import functions as F

    us = F.greatest(F.col("latency_ns"), F.lit(1)) / 1e3
    b = F.floor(F.log10(us) * HIST_BINS_PER_DECADE).cast("long")
    return (
        events.filter((F.col("kind") == Kind.ACKED.value) & F.col("latency_ns").isNotNull())
        .groupBy("delivery", b.alias("bin"))
        .agg(F.count(F.lit(1)).alias("count"))
        .select(
            "delivery",
            F.pow(F.lit(10.0), F.col("bin") / HIST_BINS_PER_DECADE).alias("lo_us"),
            F.pow(F.lit(10.0), (F.col("bin") + 1) / HIST_BINS_PER_DECADE).alias("hi_us"),
            "count",
        )
        .orderBy("delivery", "lo_us")
    )


def connection_stats(events: DataFrame) -> DataFrame:
    """Per connection: open/close times, peer, RTT median and max, mean cwnd, peak bytes in flight, packets lost."""
    from pyspark.sql import functions as F

    kind = F.col("kind")
    stats = kind == Kind.CONNECTION_STATS.value
    opened = kind == Kind.CONNECTION_OPENED.value
    return (
        events.filter(
            kind.isin(Kind.CONNECTION_OPENED.value, Kind.CONNECTION_CLOSED.value, Kind.CONNECTION_STATS.value)
        )
        .groupBy("connection")
        .agg(
            F.min(F.when(opened, F.col("detail"))).alias("opened_as"),
            F.min(F.when(opened, F.col("time_ns"))).alias("opened_ns"),
            F.min(F.when(kind == Kind.CONNECTION_CLOSED.value, F.col("time_ns"))).alias("closed_ns"),
            F.count(F.when(stats, 1)).alias("samples"),
            F.percentile_approx(F.when(stats, F.col("rtt_us")), 0.5, PERCENTILE_ACCURACY).alias("rtt_p50_us"),
            F.max(F.when(stats, F.col("rtt_us"))).alias("rtt_max_us"),
            F.avg(F.when(stats, F.col("cwnd"))).alias("cwnd_mean"),
            F.max(F.when(stats, F.col("bytes_in_flight"))).alias("bytes_in_flight_max"),
        )
        .join(packets_lost(events), "connection", "left")
        .orderBy("connection")
    )


def packets_lost(events: DataFrame) -> DataFrame:
    """Per recorded QUIC connection (one endpoint): packets it declared lost, as the sum of the per-interval
    increases of its cumulative counter, counted from 0 at the start; a decrease means the counter restarted
    (from 0), so the new value is that interval's increase. (Last minus first missed the losses before the first
    sample and undercounted across a restart.)"""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    samples = events.filter((F.col("kind") == Kind.CONNECTION_STATS.value) & F.col("packets_lost").isNotNull())
    previous = F.lag("packets_lost", 1, 0).over(Window.partitionBy("connection").orderBy("time_ns"))
    value = F.col("packets_lost")
    return (
        samples.select("connection", value.alias("v"), previous.alias("prev"))
        .groupBy("connection")
        .agg(F.sum(F.when(F.col("v") >= F.col("prev"), F.col("v") - F.col("prev")).otherwise(F.col("v")))
             .alias("packets_lost"))
    )  # fmt: skip


FATES = ("delivered", "cancelled", "lost_nacked", "lost_in_transit", "in_flight_at_end")
"""What became of a sent message, in the order they are decided (see `paired_channels`)."""


def paired_channels(events: DataFrame) -> DataFrame:
    """Per channel of every connection recorded on both sides (two `connection_opened` rows with one `link`):
    each message the sending side sent, matched with the receiving side's `message_received` by (channel,
    reliable or unreliable space, number), counted once under its fate: `delivered` (taken by the receiving
    application); else `cancelled` (the channel was cancelled: not a loss); else `lost_nacked` (the sender was
    told it was lost); else `lost_in_transit` (the channel or the connection ended without it); else
    `in_flight_at_end` (still under way when the recording ends). One-way latency (receive minus send time)
    only where both sides were recorded on one host, one clock."""
    from pyspark.sql import functions as F

    kind = F.col("kind")
    opened = events.filter((kind == Kind.CONNECTION_OPENED.value) & F.col("link").isNotNull()).select(
        "connection", "link", "host", F.split("detail", " ")[0].alias("side")
    )
    links = (
        opened.groupBy("link")
        .agg(F.countDistinct("connection").alias("sides"), F.countDistinct("host").alias("hosts"))
        .filter(F.col("sides") == 2)
    )
    sides = F.broadcast(opened.join(links, "link").select("connection", "link", "side", "hosts"))
    ev = events.drop("link", "host").join(sides, "connection")
    space = F.when(F.col("delivery") == "unreliable", "unreliable").otherwise("reliable").alias("space")
    key = ["link", "channel", "space", "number"]
    sent = ev.filter(kind == Kind.MESSAGE_SENT.value).select(
        "link", "channel", space, "number", F.col("side").alias("sender"), "delivery", "hosts",
        F.col("time_ns").alias("sent_ns"),
    )  # fmt: skip
    received = (
        ev.filter(kind == Kind.MESSAGE_RECEIVED.value)
        .select("link", "channel", space, "number", F.col("time_ns").alias("received_ns"))
        .groupBy(*key)
        .agg(F.min("received_ns").alias("received_ns"))
    )
    nacked = (
        ev.filter(kind == Kind.NACKED.value)
        .select("link", "channel", space, "number")
        .distinct()
        .withColumn("nacked", F.lit(True))
    )
    over = (
        ev.filter(kind.isin(*END_KINDS))
        .groupBy("link", "channel")
        .agg(F.max(F.when(kind == Kind.CHANNEL_CANCELLED.value, True)).alias("cancelled"))
        .withColumn("ended", F.lit(True))
    )
    closed = ev.filter(kind == Kind.CONNECTION_CLOSED.value).select("link").distinct().withColumn("closed", F.lit(True))
    m = (
        sent.join(received, key, "left")
        .join(nacked, key, "left")
        .join(over, ["link", "channel"], "left")
        .join(closed, "link", "left")
    )
    fate = (
        F.when(F.col("received_ns").isNotNull(), "delivered")
        .when(F.col("cancelled"), "cancelled")
        .when(F.col("nacked"), "lost_nacked")
        .when(F.col("ended") | F.col("closed"), "lost_in_transit")
        .otherwise("in_flight_at_end")
    )
    one_way = F.when(F.col("hosts") == 1, F.col("received_ns") - F.col("sent_ns"))
    return (
        m.select("link", "channel", "sender", "delivery", fate.alias("fate"), one_way.alias("one_way_ns"))
        .groupBy("link", "channel")
        .agg(
            F.first("sender").alias("sender"),
            F.array_join(F.array_sort(F.collect_set("delivery")), ",").alias("delivery"),
            F.count(F.lit(1)).alias("sent"),
            *[F.count(F.when(F.col("fate") == f, 1)).alias(f) for f in FATES],
            F.count("one_way_ns").alias("one_way_samples"),
            (F.percentile_approx("one_way_ns", 0.5, PERCENTILE_ACCURACY) / 1e6).alias("one_way_p50_ms"),
            (F.percentile_approx("one_way_ns", 0.99, PERCENTILE_ACCURACY) / 1e6).alias("one_way_p99_ms"),
            (F.max("one_way_ns") / 1e6).alias("one_way_max_ms"),
        )
        .select("link", "channel", "sender", "delivery", "sent", *FATES, "one_way_samples", "one_way_p50_ms",
                "one_way_p99_ms", "one_way_max_ms")
        .orderBy("link", "channel")
    )  # fmt: skip


def flows_frame(core: DataFrame) -> DataFrame:
    """The per-(connection, channel, delivery, direction) flow table as a Spark DataFrame (for SQL)."""
    counts, latencies = flow_metrics(core)
    gid = _grouping_id(FLOW_TABLES["flows"])
    return (
        counts.filter(counts["gid"] == gid)
        .drop("gid")
        .join(latencies.filter(latencies["gid"] == gid).drop("gid"), FLOW_KEYS, "left")
        .orderBy(*FLOW_KEYS)
    )


def views(events: DataFrame) -> dict[str, DataFrame]:
    """The tables `--sql` sees, by view name (columns documented in specs/RECORDING.md, "SQL views")."""
    core = events.select(*CORE_COLUMNS)
    return {
        "events": events,
        "flows": flows_frame(core),
        "channels": channel_lifetimes(core),
        "connection_stats": connection_stats(events),
        "paired_channels": paired_channels(events),
    }

"""`analyze` against counts computed independently in plain Python, on one shared local SparkSession."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from aqueduct.core.app import Delivery
from aqueduct.errors import EndReason
from aqueduct.recording import Recorder, read_events
from aqueduct.recording.synthetic import SyntheticSpec, generate
from aqueduct.spark.analyze import analyze, write_tables
from aqueduct.spark.charts import draw
from aqueduct.spark.frames import PERCENTILE_ACCURACY, QUANTILES, percentile_label
from aqueduct.spark.report import render

from . import expected


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("recording")
    generate(path, SyntheticSpec(connections=2, channels=7, messages=300, loss=0.05, seed=7))
    # plus a connection recorded through the real Recorder/tap path
    with Recorder(path) as rec:
        tap = rec.connection("server", "127.0.0.1:5000", connection_id="live")
        tap.created(9, outgoing=True, parent=1)
        tap.sent(1, 0, Delivery.ORDERED, b"a" * 10, (9, 13))
        tap.sent(9, 0, Delivery.UNRELIABLE, b"b" * 20, (17,))
        tap.sent(9, 1, Delivery.UNRELIABLE, b"b" * 30)
        tap.acked(1, True, 0, 1)
        tap.nacked(9, False, 0, 1)
        tap.acked(9, False, 1, 2)
        tap.received(13, 0, Delivery.ORDERED, b"c" * 7)
        tap.ended(9, True, EndReason.FINISHED)
        # QUIC's cumulative lost-packet counter: 3 lost before the first sample, then a restart (5 -> 2)
        for lost in (3, 5, 5, 2, 4):
            tap.stats(0.001, 14720, 0, lost)
    return path


@pytest.fixture(scope="module")
def tables(spark: Any, recording: Path) -> dict[str, pa.Table]:
    return analyze(spark, str(recording))


@pytest.fixture(scope="module")
def events(recording: Path) -> list[dict[str, Any]]:
    return read_events(recording)


def test_flow_counts_are_exact(tables: dict[str, pa.Table], events: list[dict[str, Any]]) -> None:
    want = expected.flows(events)
    got = {(r["connection"], r["channel"], r["delivery"], r["direction"]): r for r in tables["flows"].to_pylist()}
    assert set(got) == set(want)
    for key, w in want.items():
        g = got[key]
        assert (g["messages"], g["bytes"], g["acked"], g["nacked"]) == (
            w["messages"], w["bytes"], w["acked"], w["nacked"]
        ), key  # fmt: skip
        if key[3] == "out" and w["messages"]:
            assert g["nack_rate"] == pytest.approx(w["nacked"] / w["messages"])
            assert g["loss_rate"] == pytest.approx((w["messages"] - w["acked"]) / w["messages"])


def test_latency_percentiles_within_one_rank(tables: dict[str, pa.Table], events: list[dict[str, Any]]) -> None:
    want = expected.flows(events)
    checked = 0
    for r in tables["flows"].to_pylist():
        lat = want[(r["connection"], r["channel"], r["delivery"], r["direction"])]["latencies"]
        if not lat:
            assert r["p50_ms"] is None
            continue
        for q, name in zip(QUANTILES, ("p50_ms", "p99_ms", "p999_ms"), strict=True):
            lo, hi = expected.percentile_bounds(lat, q)
            assert lo / 1e6 <= r[name] <= hi / 1e6, (r["channel"], name)
            checked += 1
    assert checked >= 3 * 7


def test_rollups_add_up(tables: dict[str, pa.Table], events: list[dict[str, Any]]) -> None:
    sent = sum(1 for e in events if e["kind"] == "message_sent")
    by_delivery = [r for r in tables["by_delivery"].to_pylist() if r["direction"] == "out"]
    assert sum(r["messages"] for r in by_delivery) == sent
    by_conn = {(r["connection"], r["direction"]): r["bytes"] for r in tables["by_connection"].to_pylist()}
    assert by_conn[("live", "out")] == 60 and by_conn[("live", "in")] == 7
    summary = tables["summary"].to_pylist()[0]
    assert summary["events"] == len(events)
    assert summary["connections"] == 3
    assert summary["messages"] == sum(1 for e in events if e["kind"] in expected.MESSAGE)


def test_channel_lifetimes_end_states_and_trees(tables: dict[str, pa.Table], events: list[dict[str, Any]]) -> None:
    want = expected.channels(events)
    got = {(r["connection"], r["channel"]): r for r in tables["channels"].to_pylist()}
    assert set(got) == set(want)
    for key, w in want.items():
        g = got[key]
        assert g["end_state"] == w["state"], key
        assert (g["parent"], g["depth"], g["fanout"]) == (w["parent"], w["depth"], w["fanout"]), key
        if w["lifetime_s"] is None:
            assert g["lifetime_s"] is None
        else:
            assert g["lifetime_s"] == pytest.approx(w["lifetime_s"])
    assert got[("live", 9)]["end_state"] == "channel_finished"
    assert got[("live", 13)]["end_state"] == "open"
    assert (got[("live", 9)]["depth"], got[("live", 1)]["fanout"]) == (1, 2)
    trees = {r["connection"]: r for r in tables["trees"].to_pylist()}
    # channel 17 only ever appears as an attachment: it is in the tree (1 -> 9 -> 17) but has no lifetime row
    assert (trees["live"]["channels"], trees["live"]["max_depth"], trees["live"]["roots"]) == (4, 2, 1)
    for conn in ("conn-0000", "conn-0001"):
        assert trees[conn]["max_depth"] == max(w["depth"] for k, w in want.items() if k[0] == conn)


def test_top_channels_are_the_largest(tables: dict[str, pa.Table]) -> None:
    top = [r["bytes"] for r in tables["top_channels"].to_pylist()]
    everything = sorted((r["bytes"] for r in tables["channels"].to_pylist()), reverse=True)
    assert top == everything[: len(top)] and len(top) == 10


def test_timeline_and_histogram_cover_every_message(tables: dict[str, pa.Table], events: list[dict[str, Any]]) -> None:
    tl = tables["timeline"].to_pylist()
    total = sum(r["msgs_per_s"] * r["width_s"] for r in tl)
    assert total == pytest.approx(sum(1 for e in events if e["kind"] in expected.MESSAGE))
    acked_with_latency = sum(1 for e in events if e["kind"] == "acked" and e["latency_ns"] is not None)
    assert sum(r["count"] for r in tables["latency_histogram"].to_pylist()) == acked_with_latency


def test_connection_stats(tables: dict[str, pa.Table], events: list[dict[str, Any]]) -> None:
    stats = {r["connection"]: r for r in tables["connection_stats"].to_pylist()}
    assert set(stats) == {"conn-0000", "conn-0001", "live"}
    for conn, row in stats.items():
        rtts = [e["rtt_us"] for e in events if e["connection"] == conn and e["kind"] == "connection_stats"]
        assert row["samples"] == len(rtts) and row["rtt_max_us"] == max(rtts, default=None)
        opened = [e for e in events if e["connection"] == conn and e["kind"] == "connection_opened"]
        assert (row["opened_ns"], row["opened_as"]) == (opened[0]["time_ns"], opened[0]["detail"])
    assert stats["live"]["opened_as"] == "server 127.0.0.1:5000" and stats["live"]["closed_ns"] is None


def test_outputs_written_and_rendered(tables: dict[str, pa.Table], tmp_path: Path) -> None:
    paths = write_tables(tables, tmp_path)
    assert {p.name for p in paths} >= {"flows.parquet", "channels.parquet", "summary.parquet"}
    pngs = draw(tables, tmp_path)
    assert [p.name for p in pngs] == ["throughput.png", "latency.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    text = render(tables)
    assert "Per delivery mode" in text and "unreliable" in text and "conn-0001" in text


def test_packets_lost_sums_per_interval_increases(tables: dict[str, pa.Table], events: list[dict[str, Any]]) -> None:
    stats = {r["connection"]: r for r in tables["connection_stats"].to_pylist()}
    # 3 before the first sample, +2, +0, a restart counting 2, +2 (max minus min said 3)
    assert stats["live"]["packets_lost"] == 9
    for conn, row in stats.items():
        assert row["packets_lost"] == expected.packets_lost(events, conn), conn
    assert "packets_lost: QUIC packets" in render(tables)


def test_percentiles_say_how_exact_they_are(tables: dict[str, pa.Table], events: list[dict[str, Any]]) -> None:
    want = expected.flows(events)
    exact = 0
    for r in tables["flows"].to_pylist():
        lat = want[(r["connection"], r["channel"], r["delivery"], r["direction"])]["latencies"]
        assert r["latency_samples"] == len(lat)
        if not lat:
            continue
        # few samples: the nearest-rank percentile itself, and labelled so
        assert r["percentiles"] == "exact"
        for q, name in zip(QUANTILES, ("p50_ms", "p99_ms", "p999_ms"), strict=True):
            assert r[name] == lat[max(1, math.ceil(q * len(lat))) - 1] / 1e6, (r["channel"], name)
        exact += 1
    assert exact >= 7
    assert percentile_label(PERCENTILE_ACCURACY) == "exact"
    assert percentile_label(PERCENTILE_ACCURACY * 50 + 1) == "approx ±51 ranks"
    text = render(tables)
    assert "percentile_approx at accuracy 10,000" in text
    assert any(line.endswith(" exact") for line in text.splitlines())  # the label column is shown

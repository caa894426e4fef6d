"""The `aqueduct` streaming data source and sink against a live publisher, on one shared SparkSession."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aqueduct.quic.certs import DevCerts
from aqueduct.spark.stream import AqueductStreamReader, AqueductStreamWriter, Spool, _Rows

from .publisher import Publisher

GUARD = 120.0


@pytest.fixture(scope="module")
def publisher(certs: DevCerts) -> Iterator[Publisher]:
    with Publisher(certs) as pub:
        yield pub


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + GUARD
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)  # polling a condition, with a failure guard


def _query(spark: Any, publisher: Publisher, certs: DevCerts, base: Path) -> Any:
    stream = (
        spark.readStream.format("aqueduct")
        .option("url", publisher.url)
        .option("ca", str(certs.ca))
        .option("topic", "telemetry")
        .option("spool", str(base / "spool"))
        .load()
    )
    return (
        stream.selectExpr("offset", "value")
        .writeStream.format("aqueduct")
        .option("url", publisher.url)
        .option("ca", str(certs.ca))
        .option("topic", "copy")
        .option("ledger", str(base / "ledger"))
        .option("checkpointLocation", str(base / "checkpoint"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def _published_offsets(publisher: Publisher) -> list[int]:
    return [row["offset"] for _batch, row in publisher.rows()]


def test_every_message_once_across_a_restart(spark: Any, publisher: Publisher, certs: DevCerts,
                                             tmp_path: Path) -> None:  # fmt: skip
    publisher.add("telemetry", [{"i": i} for i in range(40)])
    query = _query(spark, publisher, certs, tmp_path)
    try:
        _until(lambda: len(_published_offsets(publisher)) >= 40, "the first 40 messages")
    finally:
        query.stop()
    publisher.add("telemetry", [{"i": i} for i in range(40, 90)])
    query = _query(spark, publisher, certs, tmp_path)  # restarts from the checkpoint
    try:
        _until(lambda: len(_published_offsets(publisher)) >= 90, "all 90 messages")
        query.processAllAvailable()
    finally:
        query.stop()
    rows = [row for _batch, row in publisher.rows()]
    assert sorted(r["offset"] for r in rows) == list(range(90))  # each exactly once
    assert all(json.loads(r["value"]) == {"i": r["offset"]} for r in rows)
    assert publisher.subscriptions >= 2


def test_sink_skips_a_batch_id_it_already_delivered(publisher: Publisher, certs: DevCerts, tmp_path: Path) -> None:
    before = len(publisher.published)
    writer = AqueductStreamWriter(
        {"url": publisher.url, "ca": str(certs.ca), "topic": "direct", "ledger": str(tmp_path / "ledger")}
    )
    batch = [_Rows([{"k": 1}, {"k": 2}]), _Rows([{"k": 3}])]
    writer.commit(batch, 7)
    writer.commit(batch, 7)  # a replayed batch 7
    writer.commit([_Rows([{"k": 4}])], 8)
    got = publisher.published[before:]
    assert got == [(7, {"k": 1}), (7, {"k": 2}), (7, {"k": 3}), (8, {"k": 4})]
    assert publisher.repeats == 0  # the ledger saved resending batch 7


def test_spool_keeps_rows_until_committed(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path))
    spool.append([(0, "a", "ordered", 0, 1), (1, "b", "ordered", 1, 2)])
    spool.append([(2, "c", "ordered", 2, 3)])
    assert spool.stop(0) == 3
    assert [r[1] for r in spool.read(1, 3)] == ["b", "c"]
    spool.commit(2)
    assert spool.read(0, 3) == [(2, "c", "ordered", 2, 3)]
    assert spool.stop(0) == 3
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_spool_ledger_and_url_are_required() -> None:
    with pytest.raises(ValueError, match="spool"):
        AqueductStreamReader({"url": "aqueduct://127.0.0.1:1"})
    with pytest.raises(ValueError, match="ledger"):
        AqueductStreamWriter({"url": "aqueduct://127.0.0.1:1"})
    with pytest.raises(ValueError, match="url"):
        AqueductStreamReader({"spool": "/tmp/x"})

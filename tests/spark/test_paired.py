"""Both sides of a connection recorded: sides paired by their shared link, messages matched per channel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aqueduct.recording import Kind, Recorder, make_row
from aqueduct.spark.frames import load_events, paired_channels

MS = 1_000_000


def _write(path: Path) -> None:
    rows: list[tuple[object, ...]] = []

    def opened(conn: str, side: str, link: str | None, host: str) -> None:
        rows.append(make_row(0, Kind.CONNECTION_OPENED, conn, detail=f"{side} 127.0.0.1:1", link=link, host=host))

    def sent(conn: str, ch: int, mode: str, n: int, t: int) -> None:
        rows.append(make_row(t, Kind.MESSAGE_SENT, conn, channel=ch, direction="out", delivery=mode, number=n,
                             length=10))  # fmt: skip

    def received(conn: str, ch: int, mode: str, n: int, t: int) -> None:
        rows.append(make_row(t, Kind.MESSAGE_RECEIVED, conn, channel=ch, direction="in", delivery=mode, number=n,
                             length=10))  # fmt: skip

    opened("c", "client", "L1", "h1")
    opened("s", "server", "L1", "h1")
    # channel 4, client -> server, ordered: 0..2 delivered, then the client cancels (3, 4: cancelled, no loss)
    for n in range(5):
        sent("c", 4, "ordered", n, 10 * MS * n)
    for n in range(3):
        received("s", 4, "reliable", n, 10 * MS * n + (n + 1) * MS)
    rows.append(make_row(60 * MS, Kind.CHANNEL_CANCELLED, "c", channel=4, direction="out"))
    rows.append(make_row(61 * MS, Kind.CHANNEL_CANCELLED, "s", channel=4, direction="in"))
    # channel 8, client -> server, unreliable: 0 and 2 arrive, 1 is nacked, 3 still on its way at the end
    for n in range(4):
        sent("c", 8, "unreliable", n, n * MS)
    received("s", 8, "unreliable", 0, 5 * MS)
    received("s", 8, "unreliable", 2, 2 * MS + 5 * MS)
    rows.append(make_row(9 * MS, Kind.NACKED, "c", channel=8, direction="out", delivery="unreliable", number=1))
    # channel 13, server -> client, unordered: 0 arrives; the channel is over, 1 never came: lost in transit
    sent("s", 13, "unordered", 0, 0)
    sent("s", 13, "unordered", 1, MS)
    received("c", 13, "reliable", 0, 3 * MS)
    rows.append(make_row(20 * MS, Kind.CHANNEL_FINISHED, "c", channel=13, direction="in"))
    # a second link with its sides on two hosts: no one-way latency (two clocks)
    opened("c2", "client", "L2", "h1")
    opened("s2", "server", "L2", "h2")
    sent("c2", 4, "ordered", 0, 0)
    received("s2", 4, "reliable", 0, 7 * MS)
    # a connection recorded on one side only: not paired
    opened("x", "client", "L3", "h1")
    sent("x", 4, "ordered", 0, 0)
    with Recorder(path) as rec:
        for row in rows:
            rec.record(row)


@pytest.fixture(scope="module")
def paired(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], dict[str, Any]]:
    path = tmp_path_factory.mktemp("paired")
    _write(path)
    table = paired_channels(load_events(spark, str(path))).toArrow()
    return {(r["link"], r["channel"]): r for r in table.to_pylist()}


def test_each_sent_message_is_counted_once_with_its_fate(paired: dict[tuple[str, int], dict[str, Any]]) -> None:
    assert set(paired) == {("L1", 4), ("L1", 8), ("L1", 13), ("L2", 4)}
    fate = ("sent", "delivered", "lost_nacked", "lost_in_transit", "cancelled", "in_flight_at_end")
    assert {k: tuple(r[f] for f in fate) for k, r in paired.items()} == {
        ("L1", 4): (5, 3, 0, 0, 2, 0),
        ("L1", 8): (4, 2, 1, 0, 0, 1),
        ("L1", 13): (2, 1, 0, 1, 0, 0),
        ("L2", 4): (1, 1, 0, 0, 0, 0),
    }
    assert (paired[("L1", 4)]["sender"], paired[("L1", 13)]["sender"]) == ("client", "server")
    assert paired[("L1", 13)]["delivery"] == "unordered"


def test_one_way_latency_only_on_one_host(paired: dict[tuple[str, int], dict[str, Any]]) -> None:
    assert paired[("L1", 4)]["one_way_p50_ms"] == 2.0  # 1, 2, 3 ms
    assert paired[("L1", 4)]["one_way_max_ms"] == 3.0
    assert paired[("L1", 8)]["one_way_p50_ms"] == 5.0
    assert paired[("L2", 4)]["one_way_p50_ms"] is None  # two hosts, two clocks

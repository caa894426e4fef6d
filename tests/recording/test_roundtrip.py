"""Recording round trip: rows written come back equal and in order, across segment rotation."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aqueduct.recording import COLUMNS, Kind, Recorder, RecordingError, make_row, read_events, sealed_segments

KINDS = [k.value for k in Kind]

rows_strategy = st.lists(
    st.builds(
        lambda t, kind, conn, channel, number, length, att, payload: make_row(
            t, kind, conn, channel=channel, number=number, length=length, attachments=att, payload=payload
        ),
        st.integers(0, 2**63 - 1),
        st.sampled_from(KINDS),
        st.text(min_size=1, max_size=8),
        st.none() | st.integers(0, 2**62),
        st.none() | st.integers(0, 2**62),
        st.none() | st.integers(0, 1 << 30),
        st.none() | st.lists(st.integers(0, 2**62), max_size=3),
        st.none() | st.binary(max_size=16),
    ),
    max_size=60,
)


def _as_dict(row: tuple[object, ...]) -> dict[str, object]:
    out = dict(zip(COLUMNS, row, strict=True))
    if out["attachments"] is not None:
        out["attachments"] = list(out["attachments"])  # type: ignore[call-overload]
    return out


@settings(max_examples=25, deadline=None)
@given(rows=rows_strategy, batch=st.integers(1, 7))
def test_rows_come_back_equal_and_in_order_across_rotation(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[object, ...]], batch: int
) -> None:
    directory = tmp_path_factory.mktemp("rec")
    # segment_bytes=1 seals after every row group; batch_rows splits the rows into many row groups
    with Recorder(directory, segment_bytes=1, batch_rows=batch) as rec:
        for row in rows:
            rec.record(row)
    assert read_events(directory) == [_as_dict(r) for r in rows]
    if len(rows) > batch:
        assert len(sealed_segments(directory)) > 1
    assert not [p for p in Path(directory).iterdir() if p.name.startswith(".")]


def test_time_rotation_seals_an_idle_segment(tmp_path: Path) -> None:
    with Recorder(tmp_path, segment_seconds=0.0, flush_seconds=0.01) as rec:
        rec.record(make_row(1, Kind.CONNECTION_OPENED, "c"))
        rec.flush()
        assert rec.wait_sealed(1)
        assert len(sealed_segments(tmp_path)) == 1  # sealed while the recorder is still open
        rec.record(make_row(2, Kind.CONNECTION_CLOSED, "c"))
    assert [e["time_ns"] for e in read_events(tmp_path)] == [1, 2]
    assert len(sealed_segments(tmp_path)) == 2


def test_open_segment_is_hidden_until_sealed(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    rec.record(make_row(1, Kind.CONNECTION_OPENED, "c"))
    rec.flush()
    assert sealed_segments(tmp_path) == []
    assert read_events(tmp_path) == []
    assert [p.name.startswith(".") and p.name.endswith(".tmp") for p in tmp_path.iterdir()] == [True]
    rec.close()
    assert len(read_events(tmp_path)) == 1


def test_empty_recording_reads_as_empty(tmp_path: Path) -> None:
    Recorder(tmp_path).close()
    assert read_events(tmp_path) == []
    assert sealed_segments(tmp_path) == []


def test_foreign_parquet_is_rejected(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1]}), tmp_path / "other.parquet")
    with pytest.raises(RecordingError, match=r"other\.parquet: not an aqueduct recording segment"):
        read_events(tmp_path)


def test_truncated_segment_is_rejected(tmp_path: Path) -> None:
    with Recorder(tmp_path) as rec:
        rec.record(make_row(1, Kind.CONNECTION_OPENED, "c"))
    (seg,) = sealed_segments(tmp_path)
    seg.write_bytes(seg.read_bytes()[:-20])
    with pytest.raises(RecordingError, match="not a readable Parquet file"):
        read_events(tmp_path)


def test_make_row_rejects_unknown_columns() -> None:
    with pytest.raises(ValueError, match="unknown"):
        make_row(1, Kind.ACKED, "c", colour="red")

"""`aqueduct bench --loss-curves`: Stream and Aqueduct-on-QUIC through the impairment proxy (no timing asserted)."""

from __future__ import annotations

import asyncio

import pytest

from aqueduct.bench import report
from aqueduct.bench.loss import LOSSES, PATHS, curves
from aqueduct.bench.runner import Options, run


def test_each_loss_level_is_compared_with_the_same_path_at_zero_loss() -> None:
    rows = curves({"marlin stream": {"0.0": [10.0, 12.0, 14.0], "0.05": [6.0]},
                   "aqueduct ordered raw": {"0.0": [4.0], "0.05": [1.0]}})
    by = {(r["path"], r["loss"]): r for r in rows}
    assert by[("marlin stream", 0.05)]["x_lossless"] == pytest.approx(0.5)
    assert by[("marlin stream", 0.0)]["low"] == 10.0 and by[("marlin stream", 0.0)]["high"] == 14.0
    assert by[("aqueduct ordered raw", 0.05)]["x_lossless"] == pytest.approx(0.25)


@pytest.mark.timeout(240)
def test_a_tiny_run_measures_every_path_at_every_loss_and_reports_the_target() -> None:
    opts = Options(rounds=1, window=0.02, setups=1, api_channels=0, engine_channels=0, only=("marlin",),
                   loss_curves=True, loss_window=0.1, loss_rounds=1)
    results = asyncio.run(run(opts))
    assert {(r["path"], r["loss"]) for r in results.loss} == {(p, x) for p in PATHS for x in LOSSES}
    assert all(r["mb_s"] > 0 for r in results.loss)
    text = report.table(results)
    assert "goodput under loss" in text
    target = next(t for t in report.targets(results) if t.name.startswith("Marlin Stream goodput at 5% loss"))
    assert target.value is not None
    assert report.as_json(results)["loss_curves"] == results.loss

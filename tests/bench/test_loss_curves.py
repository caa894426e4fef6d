"""`aqueduct bench --loss-curves`: Stream and Aqueduct-on-QUIC through the impairment proxy (no timing asserted)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import aqueduct
from aqueduct.bench import aqserver, report
from aqueduct.bench.clients import AqueductClient
from aqueduct.bench.loss import BULK, LOSSES, PATHS, curves
from aqueduct.bench.runner import Options, run
from aqueduct.bench.settings import bench_settings
from aqueduct.bench.tally import Tally
from aqueduct.core.app import Delivery
from aqueduct.quic.certs import make_dev_certs
from aqueduct.testing.impair import Impairment, ImpairProxy


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


@pytest.mark.timeout(120)
@pytest.mark.parametrize("loss", LOSSES)
async def test_a_loss_cell_goes_through_the_proxy_at_its_loss_and_reports_what_the_server_counted(
        loss: float, tmp_path: Path) -> None:
    """Counted on the far side: the proxy (the path's impairment) dropped datagrams only when the row's loss is not
    zero, and the bytes the row reports are the messages the server counted."""
    certs = make_dev_certs(tmp_path)
    tally = Tally()
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, codec=aqueduct.RawCodec(),
                              settings=bench_settings()) as server:
        serving = asyncio.ensure_future(aqserver.accept(server, "raw", tally))
        imp = Impairment(loss=loss)
        proxy = await ImpairProxy.start(("127.0.0.1", server.address[1]), up=imp, down=imp, seed=1)
        try:
            client = AqueductClient(proxy.address[1], certs.ca, "raw", Delivery.ORDERED)
            await client.open()
            try:
                rate = await client.oneway(BULK, 60.0, 8)  # the limit ends it: 2 MiB through the proxy
            finally:
                await client.close()
        finally:
            proxy.close()
            serving.cancel()
    assert rate.messages == tally.messages == 8 and rate.nbytes == 8 * BULK
    dropped = proxy.stats.up.dropped + proxy.stats.down.dropped
    assert proxy.stats.up.received > 8 and (dropped > 0) == (loss > 0)

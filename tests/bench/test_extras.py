"""`aqueduct bench` finds aeron_compat's rows through the `aqueduct.bench` entry points (aqueduct imports none).

The declaration in pyproject.toml is checked against the code; the installed metadata is what the suite reads
(reinstall the project after changing the declaration); a tiny run measures the Marlin row through the registry.
"""

from __future__ import annotations

import tomllib
from importlib import import_module
from pathlib import Path

import pytest

from aqueduct.bench import extras, loss, netloss
from aqueduct.bench.runner import BY_NAME, Options, run

ROOT = Path(__file__).resolve().parents[2]


def declared() -> dict[str, str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return dict(data["project"]["entry-points"][extras.GROUP])


def test_pyproject_declares_the_marlin_row_and_it_loads() -> None:
    target = declared()["marlin"]
    module, _, name = target.partition(":")
    row = getattr(import_module(module), name)
    assert (row.name, row.key, row.loss_curves) == ("marlin stream", "stream", True)
    assert set(row.workloads) <= {"msg64", "msg16k", "bulk", "rtt_p50", "rtt_p99", "setup_1rtt"}


def test_the_installed_registry_gives_the_declared_rows_to_the_runner_and_the_loss_curves() -> None:
    found = {e.name: e for e in extras.extras()}
    assert set(found) == {"marlin stream"}, "installed metadata differs from pyproject.toml: reinstall the project"
    assert BY_NAME["marlin stream"].family == "stream"
    assert "marlin stream" in loss.PATHS and loss.PORT_KEYS["marlin stream"] == "stream"
    assert netloss.PATHS == ("tcp", "marlin stream", "aqueduct ordered raw")


@pytest.mark.timeout(120)
async def test_a_tiny_run_measures_the_marlin_row_through_the_registry() -> None:
    opts = Options(rounds=1, window=0.02, setups=1, api_channels=0, engine_channels=0, only=("marlin",))
    results = await run(opts)
    assert set(results.samples) == {"marlin stream"}
    assert set(results.samples["marlin stream"]) == set(BY_NAME["marlin stream"].workloads)
    assert all(v > 0 for values in results.samples["marlin stream"].values() for v in values)

"""Every shipped scenario validates and every sweep expands, so configs cannot rot."""
from __future__ import annotations

from pathlib import Path

import pytest

from netsim.running.sweep import Sweep
from netsim.scenario.config import Scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
SWEEPS = sorted(p for p in SCENARIOS.glob("robustness_*.yaml") if p.stem != "robustness_base")
PLAIN = sorted(p for p in SCENARIOS.glob("*.yaml") if p not in SWEEPS)


@pytest.mark.parametrize("path", PLAIN, ids=[p.stem for p in PLAIN])
def test_scenario_validates_and_its_resolved_config_reruns(path):
    cfg = Scenario.load(path).resolve()
    assert cfg["algorithms"] and cfg["clients"] >= 1
    assert Scenario(cfg).resolve() == cfg           # config.yaml of the results runs again as is


@pytest.mark.parametrize("path", SWEEPS, ids=[p.stem for p in SWEEPS])
def test_sweep_expands(path):
    sweep = Sweep.load(path)
    cells = sweep.cells()
    n_alg = len(sweep.base.resolve()["algorithms"])
    assert len(cells) == len(sweep.points()) * n_alg * len(sweep.spec["seeds"])
    assert len({c.id for c in cells}) == len(cells)

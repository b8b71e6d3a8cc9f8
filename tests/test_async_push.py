"""Asynchronous gradient push (algorithms/async_push.py; Assran & Rabbat 2021) with frozen
models: mass is conserved at every instant (the clients' numerators and weights plus what is
sent but not yet summed in equal the initial totals) under delays, loss, stragglers and
failures, and every de-biased model tends to the initial average; a planted receiver that adds
the newest running sum instead of its increase breaks both."""
from __future__ import annotations

import pytest
import torch

import algorithms.async_push as async_push
from algorithms.snapshots import Snapshots
from async_helpers import SCENARIOS, play, scenario, spread

FROZEN = {"train": {"lr": 0.0, "batch_size": 4, "local_steps": 1}, "schedule.until": 3.0,
          "schedule.eval_every": 0.5, "network.latency.bandwidth": 1.0e7}


def frozen_run(over: dict) -> tuple[float, float]:
    """Largest relative mass error over the windows, and the final largest distance of a
    de-biased model to the initial average relative to the initial spread."""
    start, errors = {}, []

    def setup(alg):
        spread(alg.mass[:, :-1])
        start["mass"] = alg.mass.double().sum(0)
        start["mean"] = alg.mass[:, :-1].double().mean(0)
        start["spread"] = float((alg.mass[:, :-1].double() - start["mean"]).abs().max())

    def check(alg):
        total = alg.mass.double().sum(0) + alg.in_flight_mass().double()
        errors.append(float((total - start["mass"]).abs().max() / start["mass"].abs().max()))

    alg = play(scenario({**over, **FROZEN}), 1, check, setup)
    gap = (alg.personal_models().double() - start["mean"]).abs().max()
    return max(errors), float(gap) / start["spread"]


@pytest.mark.parametrize("name", ["loss", "stragglers"])
def test_mass_conserved_and_average_reached(name):
    error, gap = frozen_run(SCENARIOS[name])
    assert error < 1e-5
    assert gap < 1e-3


def test_mass_conserved_under_failures():
    """Crashed clients keep their mass (the average of all is then out of reach)."""
    error, _ = frozen_run(SCENARIOS["failures"])
    assert error < 1e-5


def test_planted_lossy_receiver_is_caught(monkeypatch):
    monkeypatch.setattr(async_push, "inbox_mass", lambda new, used: new)
    error, gap = frozen_run(SCENARIOS["loss"])
    assert error > 1e-2 and gap > 1e-2


def test_pushes_in_passes_of_a_few_rows_change_nothing(monkeypatch):
    """A push group's rows taken a few at a time (act_push and the de-biasing for the gradients,
    ROWS_PER_PASS) give the same state bit for bit as one pass: the same groups, row by row
    arithmetic; the snapshot table grows on the way (6 clients, 25 rows at first)."""
    over = {**SCENARIOS["loss"], "schedule.until": 1.0}
    whole = play(scenario(over), 1)
    monkeypatch.setattr(async_push, "ROWS_PER_PASS", 2)
    passes = play(scenario(over), 1)
    assert len(whole.snaps.rows) > 25
    assert whole.net.events.rows == passes.net.events.rows
    assert torch.equal(whole.mass, passes.mass) and torch.equal(whole.phi, passes.phi)


def test_snapshot_table_doubles_keeping_its_rows():
    """Taking a row when none is free doubles the table: the rows held keep their values, the
    new ones are zero, and rows are handed out in increasing order (so the numbering, and with
    it every sum's order, does not depend on the first capacity)."""
    snaps = Snapshots(3, 4, torch.float64, torch.device("cpu"), zero_row=True)
    taken = [snaps.take(), snaps.take()]
    snaps.rows[taken] = torch.arange(8, dtype=torch.float64).view(2, 4) + 1
    before = snaps.rows.clone()
    assert [snaps.take(), snaps.take(), snaps.take()] == [3, 4, 5] and taken == [1, 2]
    assert len(snaps.rows) == 6 and torch.equal(snaps.rows[:3], before)
    assert not snaps.rows[3:].any()

"""Asynchronous gradient push (algorithms/async_push.py; Assran & Rabbat 2021) with frozen
models: mass is conserved at every instant (the clients' numerators and weights plus what is
sent but not yet summed in equal the initial totals) under delays, loss, stragglers and
failures, and every de-biased model tends to the initial average; a planted receiver that adds
the newest running sum instead of its increase breaks both."""
from __future__ import annotations

import pytest

import algorithms.async_push as async_push
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

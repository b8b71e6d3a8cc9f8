"""Continuous-time link states (netsim/links/continuous.py): the Markov chain's long-run up
fraction is its stationary probability mean_up / (mean_up + mean_down), its holding times are
exponential with the stated means, and its answers do not depend on the order of the asked
times; ``resample`` holds one draw of the round model per coherence window."""
from __future__ import annotations

import numpy as np
import pytest

from netsim.links import make_links
from netsim.links.continuous import MarkovLinks, ResampledLinks
from netsim.links.edges import Edges

MEAN_UP, MEAN_DOWN, HORIZON = 3.0, 1.0, 2000.0


@pytest.fixture(scope="module")
def chain() -> MarkovLinks:
    links = MarkovLinks(200, np.random.default_rng(1), MEAN_UP, MEAN_DOWN)
    links.extend(HORIZON)
    return links


def holding(links: MarkovLinks, up: bool) -> np.ndarray:
    """Complete holding times in state ``up`` (the first period, cut at 0, left out)."""
    gaps = np.diff(links.switch, axis=1)                  # period k + 1 of each edge
    state = links.first[:, None] ^ (np.arange(1, gaps.shape[1] + 1) % 2 == 1)[None, :]
    keep = (state == up) & (links.switch[:, 1:] <= HORIZON)
    return gaps[keep]


def test_long_run_up_fraction_is_stationary(chain):
    t = np.linspace(0, HORIZON, 4001)
    up = np.mean([chain.up_edges(s).mean() for s in t])
    assert up == pytest.approx(MEAN_UP / (MEAN_UP + MEAN_DOWN), abs=0.01)


@pytest.mark.parametrize("up, mean", [(True, MEAN_UP), (False, MEAN_DOWN)])
def test_holding_times_exponential(chain, up, mean):
    h = holding(chain, up)
    assert h.size > 10000
    assert h.mean() == pytest.approx(mean, rel=0.03)
    assert h.std() / h.mean() == pytest.approx(1.0, abs=0.05)        # exponential: CV 1
    for q in (0.5, 1.0, 2.0):                                       # P(H > q m) = exp(-q)
        assert np.mean(h > q * mean) == pytest.approx(np.exp(-q), abs=0.02)


def test_markov_answers_do_not_depend_on_asked_times():
    times = np.random.default_rng(0).uniform(0, 50, 200)
    a = MarkovLinks(30, np.random.default_rng(5), 1.0, 0.5)
    b = MarkovLinks(30, np.random.default_rng(5), 1.0, 0.5)
    sorted_answers = {t: a.up_edges(t) for t in np.sort(times)}
    for t in times:
        assert np.array_equal(b.up_edges(t), sorted_answers[t])


def test_markov_answers_for_some_edges_are_those_for_all():
    """A send asks for its sender's out-edges only (``up``): the answers are ``up_edges``'s for
    those edges, whatever was asked before and in any order of times."""
    rng = np.random.default_rng(1)
    a = MarkovLinks(40, np.random.default_rng(5), 0.3, 0.2)
    b = MarkovLinks(40, np.random.default_rng(5), 0.3, 0.2)
    for t in np.concatenate([np.sort(rng.uniform(0, 20, 300)), rng.uniform(0, 20, 100)]):
        edges = rng.choice(40, int(rng.integers(1, 8)), replace=False)
        assert np.array_equal(b.up(float(t), edges), a.up_edges(float(t))[edges])
        assert a.up(float(t), edges).tolist() == b.up_edges(float(t))[edges].tolist()


def test_resample_holds_a_draw_per_window():
    edges = Edges.coerce(~np.eye(10, dtype=bool))
    base = make_links({"name": "bernoulli", "p": 0.3, "symmetric": False}, edges,
                      np.random.default_rng(2))
    links = ResampledLinks(base, coherence=0.5)
    epochs = [links.up_edges(k * 0.5 + 0.1).copy() for k in range(400)]
    assert np.array_equal(links.up_edges(199.6), epochs[-1])        # same window, same state
    assert np.mean(epochs) == pytest.approx(0.3, abs=0.01)
    assert not np.array_equal(epochs[0], epochs[1])
    with pytest.raises(ValueError, match="backwards"):
        links.up_edges(1.0)

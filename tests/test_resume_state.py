"""A checkpoint holds the whole state of every round-based algorithm: one restored from the
state after round 1 (netsim.running.checkpoint's dump and load, what a resumed run does) plays
rounds 2..5 to the same personal models and collaboration, bit for bit, as the algorithm it was
taken from. State that only aliases other state (a tensor sharing a numpy array's memory, a
numpy view) is copied apart by the checkpoint and would differ here: IFCA's personal-model
index did."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from algorithms import ALGORITHMS
from algorithms.async_base import AsyncAlgorithm
from helpers import DIGITS, build, play
from netsim import Scenario
from netsim.running.checkpoint import dump_algorithm, load_algorithm

#: cheap settings for the algorithms whose defaults run long
SMALL = {"diple": {"stage2_steps": 2},
         "pdbo_mtl": {"inner_steps": 4, "decay_last": [2], "neumann_steps": 2, "learners": 2},
         "pdbo_mtl_local": {"inner_steps": 4, "decay_last": [2], "learners": 2},
         "fedavg_ft": {"finetune_rounds": 2}, "fedprox_ft": {"finetune_rounds": 2}}
ROUND_BASED = [n for n in ALGORITHMS.names() if not issubclass(ALGORITHMS.get(n, "name").obj,
                                                                 AsyncAlgorithm)]


@pytest.mark.parametrize("name", ROUND_BASED)
def test_a_restored_algorithm_plays_on_to_the_same_bits(name):
    raw = Scenario(DIGITS).with_overrides({          # IFCA's clients change centre in rounds 2-4
        "algorithms": [{"name": name, **SMALL.get(name, {})}],
        "network.loss": {"p": 0.1}, "schedule.rounds": 6}).raw
    alg = build(raw)
    play(alg, range(2))
    restored = build(raw)
    load_algorithm(restored, dump_algorithm(alg))
    play(alg, range(2, 6))
    play(restored, range(2, 6))
    assert torch.equal(restored.personal_models(), alg.personal_models())
    np.testing.assert_array_equal(restored.collaboration(), alg.collaboration())

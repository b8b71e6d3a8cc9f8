"""Torch threads of a run: --threads, the scenario's threads: and netsim's default."""
from __future__ import annotations

import pytest
import torch

from netsim import Scenario, run
from netsim.errors import ConfigError
from netsim.threads import DEFAULT_THREADS, use_threads

from helpers import TINY

SMALL = dict(TINY, algorithms=["local"], schedule={"rounds": 1, "eval_every": 1})


def test_run_sets_threads_from_argument_scenario_or_default(tmp_path):
    try:
        run(Scenario(SMALL), out=tmp_path / "a", quiet=True, threads=2)
        assert torch.get_num_threads() == 2
        run(Scenario(dict(SMALL, threads=3)), out=tmp_path / "b", quiet=True)
        assert torch.get_num_threads() == 3
        run(Scenario(SMALL), out=tmp_path / "c", quiet=True)
        assert torch.get_num_threads() == DEFAULT_THREADS == 1
    finally:
        torch.set_num_threads(1)


@pytest.mark.parametrize("bad", [0, -2, 1.5, "two", True])
def test_bad_threads_are_refused(bad):
    with pytest.raises(ConfigError, match="^threads: "):
        Scenario(dict(SMALL, threads=bad)).resolve()
    with pytest.raises(ConfigError, match="^threads: "):
        use_threads(bad)

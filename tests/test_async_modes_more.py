"""FedBuff, FedAsync and gossip learning in the event-driven engine's two modes: the batched
mode gives the reference mode's event trace exactly and its numbers within float32 round-off,
on small scenarios with loss and stragglers, and with failures (as test_async_engine.py checks
for AD-PSGD and asynchronous gradient push), and a planted grouping that ignores
write-after-read conflicts is caught for each; a bad parameter names its field, the value and
what is allowed."""
from __future__ import annotations

import pytest
import torch

from async_helpers import SCENARIOS, models, play, scenario
from netsim.errors import ConfigError
from netsim.scenario.config import Scenario
from netsim.sim import grouping

ALGORITHMS = {"fedbuff": {"name": "fedbuff", "buffer_size": 3},
              "fedasync": {"name": "fedasync", "staleness": "hinge", "b": 1, "rho": 0.01},
              "gossip_learning": {"name": "gossip_learning", "period": 0.02}}
RUNS = {"loss_stragglers": {**SCENARIOS["loss"], **SCENARIOS["stragglers"]},
        "failures": SCENARIOS["failures"]}


@pytest.mark.parametrize("run", sorted(RUNS))
@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_batched_equals_reference(name, run):
    over = {**RUNS[run], "algorithms": [ALGORITHMS[name]], "train.local_steps": 2}
    ref = play(scenario({**over, "schedule.mode": "reference"}))
    bat = play(scenario(over))
    assert ref.net.events.rows == bat.net.events.rows
    torch.testing.assert_close(models(bat), models(ref), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(bat.bank.flat, ref.bank.flat, rtol=1e-4, atol=1e-5)
    assert bat.actions.calls < ref.actions.calls                  # it did batch
    kinds = {row[2] for row in ref.net.events.rows}
    assert {"wake", "finish", "send", "deliver"} <= kinds
    assert ("lost" in kinds) == (run == "loss_stragglers")


@pytest.mark.parametrize("spec, field, allowed", [
    ({"name": "fedasync", "alpha": 1.5}, "alpha", r"1\.5; allowed: a float in \(0\.0, 1\.0\]"),
    ({"name": "fedasync", "staleness": "linear"}, "staleness", "constant, polynomial, hinge"),
    ({"name": "fedbuff", "buffer_size": 0}, "buffer_size", "an int >= 1"),
    ({"name": "gossip_learning", "period": -1}, "period", "a float >= 0"),
])
def test_bad_parameters_name_the_field(spec, field, allowed):
    with pytest.raises(ConfigError, match=rf"algorithms\[0\]\.{field}: got .*{allowed}"):
        Scenario(scenario({"algorithms": [spec]})).resolve()


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_planted_grouping_without_write_after_read_is_caught(name, monkeypatch):
    """The comparison sees these algorithms' conflicts: a grouping that ignores
    write-after-read conflicts leaves the reference's numbers (not its trace)."""
    over = {**RUNS["loss_stragglers"], "algorithms": [ALGORITHMS[name]]}
    ref = play(scenario({**over, "schedule.mode": "reference"}))

    real = grouping.conflict_level

    def no_war(reads, writes, last_read, last_write):      # read-after-write conflicts only
        return real(reads, (), last_read, last_write)

    monkeypatch.setattr(grouping, "conflict_level", no_war)
    bad = play(scenario(over))
    assert ref.net.events.rows == bad.net.events.rows
    assert (bad.bank.flat - ref.bank.flat).abs().max() > 1e-3

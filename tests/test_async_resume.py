"""netsim run --resume of event-driven runs (algorithms/async_base.py, netsim.running.checkpoint):
checkpoints every window; a run interrupted after any window and resumed from its last checkpoint
ends with the same files as an uninterrupted run, byte for byte, for every event-driven
algorithm, under loss, stragglers with Markov links, and failures."""
from __future__ import annotations

import pytest

from async_helpers import SCENARIOS, scenario
from netsim import Scenario, run
from netsim.running.checkpoint import RunCheckpoint, windows
from test_resume import Crash, CrashAt, files, summary

ALGORITHMS = ["adpsgd", "async_push", "gossip_learning", "fedbuff", "fedasync", "sync_sgp",
              "sync_dpsgd", "sync_fedavg"]


def raw(name: str) -> dict:
    over = {**SCENARIOS[name], "schedule.until": 1.0, "algorithms": ALGORITHMS,
            "outputs": {"figures": False, "progress": False, "checkpoint_every": 1,
                        "trace": True}}
    return scenario(over)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_interrupted_event_driven_runs_resume_to_the_same_files(tmp_path, name, monkeypatch):
    sc = Scenario(raw(name))
    starts = []
    resume = RunCheckpoint.resume

    def record(self, *args):
        starts.append(resume(self, *args))
        return starts[-1]
    monkeypatch.setattr(RunCheckpoint, "resume", record)
    full = run(sc, out=tmp_path / "full", quiet=True).dir
    part = tmp_path / "part"
    # k counts the runs of each invocation: async_push after window 1 (its checkpoint is
    # from window 0), then fedbuff after window 3 and sync_dpsgd after window 2
    for k, t in ((1, 1), (2, 3), (3, 2)):
        with pytest.raises(Crash):
            run(sc, out=part, quiet=True, resume=True, callbacks=[CrashAt(k, t)])
        assert (part / "async_tiny" / "checkpoint.pkl").is_file()
    res = run(sc, out=part, quiet=True, resume=True).dir
    assert not (res / "checkpoint.pkl").exists()
    assert files(res) == files(full) and len(files(full)) > 20
    assert summary(res) == summary(full)
    assert [w for w in starts if w] == [1, 3, 2]     # the windows the interrupted runs went on at


def test_windows_of_a_schedule():
    assert windows({"rounds": 7, "eval_every": 2}) == 7
    assert windows({"rounds": None, "until": 1.0, "eval_every": 0.2}) == 5
    assert windows({"rounds": None, "until": 1.1, "eval_every": 0.2}) == 6
    assert windows({"rounds": None, "until": None, "steps": 30, "eval_every": 0.2}) is None

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

#: per scenario, three event-driven algorithms (each algorithm in at least one)
CASES = {"loss": ["adpsgd", "async_push", "gossip_learning"],
         "stragglers": ["fedbuff", "fedasync", "sync_sgp"],
         "failures": ["sync_dpsgd", "sync_fedavg", "async_push"]}


def raw(name: str) -> dict:
    over = {**SCENARIOS[name], "schedule.until": 1.0, "algorithms": CASES[name],
            "outputs": {"figures": False, "progress": False, "checkpoint_every": 1,
                        "trace": True}}
    return scenario(over)


@pytest.mark.parametrize("name", sorted(CASES))
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
    # k counts the runs of each invocation (of 5 windows, 0-4): the second algorithm after
    # window 1 (its checkpoint is from window 0), the third after window 3, then the third
    # again, resumed at window 3, after its last window (its checkpoint is from window 3)
    for k, t in ((1, 1), (1, 3), (0, 4)):
        with pytest.raises(Crash):
            run(sc, out=part, quiet=True, resume=True, callbacks=[CrashAt(k, t)])
        assert (part / "async_tiny" / "checkpoint.pkl").is_file()
    res = run(sc, out=part, quiet=True, resume=True).dir
    assert not (res / "checkpoint.pkl").exists()
    assert files(res) == files(full) and len(files(full)) > 10
    assert summary(res) == summary(full)
    assert starts == [0, 0, 0, 0, 0, 1, 0, 3, 4]      # the windows each run started at


def test_windows_of_a_schedule():
    assert windows({"rounds": 7, "eval_every": 2}) == 7
    assert windows({"rounds": None, "until": 1.0, "eval_every": 0.2}) == 5
    assert windows({"rounds": None, "until": 1.1, "eval_every": 0.2}) == 6
    assert windows({"rounds": None, "until": None, "steps": 30, "eval_every": 0.2}) is None

"""netsim run --resume (netsim.running.checkpoint): a run interrupted at any point and resumed from
its last checkpoint ends with the same files as an uninterrupted run, byte for byte."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from netsim import Scenario, run
from netsim.running.callbacks import Callback

TINY = {
    "name": "resume", "seed": 0, "clients": 6,
    "data": {"dataset": "digits", "partition": {"name": "label_permutation", "clusters": 2}},
    "model": {"name": "mlp", "hidden": [8]},
    "network": {"topology": "complete", "links": {"name": "bernoulli", "p": 0.7},
                "loss": {"p": 0.1}, "latency": {"base": 0.01},
                "policy": {"name": "wait_all", "timeout": 0.5, "max_staleness": 1}},
    "train": {"lr": 0.1, "batch_size": 8, "local_steps": 2},
    "schedule": {"rounds": 6, "eval_every": 2},
    "algorithms": ["fedavg", "sgp", {"name": "diple", "stage2_steps": 2}, "cobo", "dpfl",
                   {"name": "pdbo_mtl", "inner_steps": 4, "decay_last": [2], "neumann_steps": 2,
                    "learners": 2, "train": {"momentum": 0}}],
    "outputs": {"figures": False, "progress": False, "checkpoint_every": 2},
}


class Crash(Exception):
    pass


class CrashAt(Callback):
    """Stops the process's run after round ``t`` (0-based) of the ``k``-th (algorithm, seed)
    run it starts."""

    def __init__(self, k: int, t: int):
        self.k, self.t, self.runs = k, t, -1

    def on_start(self, alg) -> None:
        self.runs += 1

    def on_round(self, alg, t: int) -> None:
        if self.runs == self.k and t == self.t:
            raise Crash


def files(folder: Path) -> dict[str, bytes]:
    """Every result file but the summary (compared without wall-clock fields)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "summary.json"}


def summary(folder: Path) -> dict:
    def strip(d):
        return {k: strip(v) for k, v in d.items() if k not in ("wall_time", "engine_share")} \
            if isinstance(d, dict) else d
    return strip(json.loads((folder / "summary.json").read_text()))


def test_interrupted_runs_resume_to_the_same_files(tmp_path):
    sc = Scenario(TINY)
    full = run(sc, seeds=[0, 1], out=tmp_path / "full", quiet=True).dir
    part = tmp_path / "part"
    # k counts the runs of each invocation: DiPLe seed 0 after round 4, DiPLe seed 1 after
    # round 3 (its checkpoint is from round 2), PDBO seed 1 after round 5
    for k, t in ((2, 3), (6, 2), (3, 4)):
        with pytest.raises(Crash):
            run(sc, seeds=[0, 1], out=part, quiet=True, resume=True, callbacks=[CrashAt(k, t)])
        assert (part / "resume" / "checkpoint.pkl").is_file()
    res = run(sc, seeds=[0, 1], out=part, quiet=True, resume=True).dir
    assert not (res / "checkpoint.pkl").exists() and not (res / "INCOMPLETE").exists()
    assert files(res) == files(full) and len(files(full)) > 40
    assert summary(res) == summary(full)


def test_resume_refuses_another_runs_folder(tmp_path):
    run(Scenario(TINY).with_overrides({"schedule.rounds": 2, "algorithms": ["sgp"]}),
        out=tmp_path, quiet=True)
    from netsim.errors import ConfigError
    with pytest.raises(ConfigError, match="--resume"):
        run(Scenario(TINY).with_overrides({"schedule.rounds": 3, "algorithms": ["sgp"]}),
            out=tmp_path, quiet=True, resume=True)


def test_kill_minus_9_then_resume_from_the_command_line(tmp_path):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(json.dumps({**TINY, "schedule": {"rounds": 8, "eval_every": 2},
                               "algorithms": ["sgp", {"name": "diple", "stage2_steps": 2}]}))
    cmd = [sys.executable, "-m", "netsim.cli", "run", str(cfg), "--seeds", "0", "1", "-q"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run(cmd + ["--out", str(tmp_path / "full")], check=True, env=env)
    proc = subprocess.Popen(cmd + ["--out", str(tmp_path / "part")], env=env)
    ckpt = tmp_path / "part" / "resume" / "checkpoint.pkl"
    deadline = time.time() + 120
    while not ckpt.is_file() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    subprocess.run(cmd + ["--out", str(tmp_path / "part"), "--resume"], check=True, env=env)
    full, part = tmp_path / "full" / "resume", tmp_path / "part" / "resume"
    assert files(part) == files(full)
    assert summary(part) == summary(full)


def test_resume_of_a_finished_run_runs_nothing(tmp_path):
    sc = Scenario(TINY).with_overrides({"schedule.rounds": 2, "algorithms": ["sgp"]})
    done = run(sc, out=tmp_path, quiet=True).dir
    before = files(done)
    res = run(sc, out=tmp_path, quiet=True, resume=True, callbacks=[CrashAt(0, 0)])
    assert res.dir == done and files(done) == before            # no run started, nothing rewritten
    assert summary(done) == summary(res.dir)


def test_default_checkpoints_wait_for_the_time_floor(monkeypatch):
    """``checkpoint_every: null``: a checkpoint due every rounds // 4 rounds is written only once
    CHECKPOINT_SECONDS of wall time have passed since the run's start or the last one; an
    explicit k writes every k rounds."""
    from netsim.running import checkpoint

    clock = [100.0]
    monkeypatch.setattr(checkpoint.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(checkpoint, "dump_algorithm", lambda alg: b"")

    def written(min_seconds: float, seconds_per_round: float) -> list[int]:
        rounds: list[int] = []
        ck = checkpoint.Checkpointer(lambda s: rounds.append(s["current"]["round"]), dict,
                                     dict, 2, 12, min_seconds)
        for t in range(12):
            clock[0] += seconds_per_round
            ck.on_round_end(None, t)
        return rounds

    assert written(0.0, 0.01) == [2, 4, 6, 8, 10]                     # explicit checkpoint_every
    assert written(checkpoint.CHECKPOINT_SECONDS, 0.01) == []          # a 0.12 s run: none
    assert written(checkpoint.CHECKPOINT_SECONDS, 3.0) == [4, 8]       # 12 s, then 12 s later

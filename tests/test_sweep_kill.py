"""kill -9 of a sweep's parent: its pool workers exit, and the sweep resumes where it stopped
(taking over the lock the killed sweep left)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from netsim.running.sweep import Sweep, run_sweep

from helpers import TINY

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs /proc")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()          # state, ppid, ...


def children(pid: int) -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir()
            if p.name.isdigit() and (s := _stat(int(p.name))) and s[1] == str(pid)]


def descendants(pid: int) -> list[int]:
    """Children, their children, ... (pool workers are children of the fork server)."""
    return [d for c in children(pid) for d in (c, *descendants(c))]


def alive(pid: int) -> bool:
    s = _stat(pid)
    return s is not None and s[0] != "Z"


def test_killed_parent_leaves_no_worker_and_relaunch_completes(tmp_path):
    # runs long enough (~0.5 s) that the pool is still working when the first one is done
    base = dict(TINY, algorithms=["local"], schedule={"rounds": 60, "eval_every": 60})
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    spec = {"scenario": "base.yaml", "name": "k", "grid": {"train.lr": [0.01 * k for k in range(1, 7)]},
            "executor": {"name": "local", "workers": 2, "threads": 1}}
    path = tmp_path / "k.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "out"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "netsim.cli", "sweep", str(path), "--out",
                             str(out)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list((out / "k" / "runs").glob("*/DONE")) and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = descendants(proc.pid)
    assert proc.poll() is None and len(workers) >= 3    # 2 workers, fork server, resource tracker
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [w for w in workers if alive(w)]
    sweep = Sweep.load(path)
    sweep.spec["executor"]["name"] = "serial"
    lines: list[str] = []
    root = run_sweep(sweep, out=out, log=lines.append)
    assert lines[0].startswith(f"sweep k: took over the lock of {out / 'k'} left by pid {proc.pid} ")
    assert " already done, " in lines[1] and not lines[1].split(", ")[1].startswith("0 ")
    index = pd.read_csv(root / "index.csv")
    assert (index["status"] == "done").all(), index["error"].tolist()
    assert len(pd.read_csv(root / "table.csv")) == 6

"""One writer per results folder (netsim.results.folder_lock) and never a deleted file netsim did
not write (netsim.results.manifest): a second writer is refused naming the holder, a killed writer's
lock is taken over, foreign files survive every rerun, a symlinked folder is refused, and a resumed
run drops the partial run's analyses."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from netsim import Results, Scenario, run
from netsim.cli import main
from netsim.errors import ConfigError
from netsim.results.folder_lock import LOCK, FolderLock
from netsim.results.manifest import MANIFEST, recorded
from netsim.running.callbacks import Callback

from helpers import TINY

SMALL = dict(TINY, algorithms=["local", "sgp"], schedule={"rounds": 2, "eval_every": 2})

#: a writer held mid-run: ``GATED SCENARIO OUT AT_GATE OPEN`` runs SCENARIO into OUT (Python
#: API), creates AT_GATE at its first round and waits there until OPEN exists
GATED = """
import sys, time
from pathlib import Path
from netsim import run
from netsim.running.callbacks import Callback

class Gate(Callback):
    def on_round(self, alg, t):
        at_gate, gate = Path(sys.argv[3]), Path(sys.argv[4])
        if not at_gate.exists():
            at_gate.write_text("")
            deadline = time.monotonic() + 60
            while not gate.exists() and time.monotonic() < deadline:
                time.sleep(0.02)

run(sys.argv[1], out=sys.argv[2], quiet=True, threads=1, callbacks=[Gate()])
"""


@pytest.fixture
def scenario_file(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(SMALL))
    return path


def one_line(err: str, kind: str = "error") -> str:
    """The one ``netsim: KIND:`` line of ``err`` (stderr; any other line is netsim's too)."""
    lines = err.splitlines()
    hits = [ln for ln in lines if ln.startswith(f"netsim: {kind}: ")]
    assert len(hits) == 1 and all(ln.startswith("netsim: ") for ln in lines), err
    return hits[0]


def start_gated(scenario: Path, out: Path, tmp_path: Path) -> subprocess.Popen:
    """A writer of ``scenario`` into ``out``, returned once it waits at its first round (it
    holds the folder's lock); ``tmp_path / "open"`` lets it go on."""
    at_gate = tmp_path / "at_gate"
    proc = subprocess.Popen([sys.executable, "-c", GATED, str(scenario), str(out), str(at_gate),
                             str(tmp_path / "open")], env={**os.environ, "OMP_NUM_THREADS": "1"})
    deadline = time.monotonic() + 120
    while not at_gate.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert at_gate.exists(), "the gated writer did not start"
    return proc


def test_second_writer_is_refused_naming_the_holder(scenario_file, tmp_path, capsys):
    out = tmp_path / "out"
    first = start_gated(scenario_file, out, tmp_path)
    folder = out / "tiny"
    before = sorted(p.name for p in folder.rglob("*"))
    for extra in ([], ["--resume"], ["--overwrite"]):
        assert main(["run", str(scenario_file), "--out", str(out), "-q", *extra]) == 2
        err = one_line(capsys.readouterr().err)
        assert err.startswith(f"netsim: error: results folder: got '{folder}'; allowed: a folder "
                              "no other netsim run or sweep is writing")
        assert f"held by pid {first.pid} on " in err and " since " in err and "(-c " in err
    with pytest.raises(ConfigError, match=f"held by pid {first.pid} "):
        run(Scenario(SMALL), out=out, quiet=True)                # the Python API too
    assert sorted(p.name for p in folder.rglob("*")) == before   # the refused ones wrote nothing
    (tmp_path / "open").write_text("")
    assert first.wait(120) == 0
    res = Results(folder)
    assert not res.incomplete and not (folder / LOCK).exists()
    rows = (folder / "metrics.csv").read_text().splitlines()
    assert len(rows) == len(set(rows)) > 1                       # each row once
    assert list(res.summary["algorithms"]) == ["local", "sgp"]


def test_killed_writer_leaves_a_stale_lock_the_next_run_takes_over(scenario_file, tmp_path,
                                                                   capsys):
    out = tmp_path / "out"
    first = start_gated(scenario_file, out, tmp_path)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    folder = out / "tiny"
    assert f'"pid": {first.pid}' in (folder / LOCK).read_text()   # left behind, held by no one
    assert main(["run", str(scenario_file), "--out", str(out)]) == 0
    note = one_line(capsys.readouterr().err, "note")
    assert note.startswith(f"netsim: note: took over the lock of {folder} left by pid "
                           f"{first.pid} on ") and note.endswith("which no longer runs (killed?)")
    assert not Results(folder).incomplete and not (folder / LOCK).exists()


def test_sweep_folder_is_locked_against_a_second_sweep(tmp_path):
    from netsim.running.sweep import run_sweep

    (tmp_path / "base.yaml").write_text(yaml.safe_dump(SMALL))
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"scenario": "base.yaml", "grid": {"train.lr": [0.1]},
                                    "executor": {"name": "serial"}}))
    root = tmp_path / "out" / "s"
    root.mkdir(parents=True)
    held: list[FolderLock] = []
    other = threading.Thread(target=lambda: held.append(FolderLock(root)))   # another holder
    other.start()
    other.join()
    with pytest.raises(ConfigError, match=rf"^sweep folder: .*held by pid {os.getpid()} "):
        run_sweep(path, out=tmp_path / "out", log=lambda s: None)
    assert sorted(p.name for p in root.iterdir()) == [LOCK]
    held[0].release()
    run_sweep(path, out=tmp_path / "out", log=lambda s: None)
    assert (root / "table.csv").is_file() and not (root / LOCK).exists()


def test_foreign_files_survive_every_rerun(scenario_file, tmp_path, capsys):
    out = tmp_path / "out"
    folder = out / "tiny"
    cmd = ["run", str(scenario_file), "--out", str(out), "-q"]
    assert main(cmd) == 0
    (folder / "notes.txt").write_text("mine")
    (folder / "mine").mkdir()
    (folder / "mine" / "deep.txt").write_text("mine")
    assert "notes.txt" not in recorded(folder) and "metrics.csv" in recorded(folder)
    for extra in ([], ["--overwrite"], ["--set", "train.lr=0.2", "--overwrite"]):
        assert main(cmd + extra) == 0                            # netsim's own files replaced
        assert (folder / "notes.txt").read_text() == (folder / "mine" / "deep.txt").read_text()
    assert Results(folder).config["train"]["lr"] == 0.2
    capsys.readouterr()
    (folder / "figures").mkdir()
    (folder / "figures" / "edited.png").write_text("mine")     # where netsim writes
    for extra in ([], ["--overwrite"], ["--resume"]):
        assert main(cmd + extra) == 2
        err = one_line(capsys.readouterr().err)
        assert "netsim did not write figures/edited.png" in err and "move or remove it" in err
    assert (folder / "figures" / "edited.png").read_text() == "mine"


@pytest.mark.parametrize("others", [[], ["precious.txt"]])
def test_a_foreign_config_yaml_is_never_replaced(scenario_file, tmp_path, capsys, others):
    folder = tmp_path / "out" / "tiny"
    folder.mkdir(parents=True)
    for name in ["config.yaml", *others]:
        (folder / name).write_text("someone: else\n")
    for extra in ([], ["--overwrite"], ["--resume"]):
        assert main(["run", str(scenario_file), "--out", str(tmp_path / "out"), *extra]) == 2
        err = one_line(capsys.readouterr().err)
        assert "it holds config.yaml" in err and "which netsim did not write (no " in err
    assert sorted(p.name for p in folder.iterdir()) == sorted(["config.yaml", *others])
    assert all((folder / n).read_text() == "someone: else\n" for n in ["config.yaml", *others])


def test_symlinked_results_folder_is_refused(scenario_file, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "tiny").symlink_to(elsewhere)
    for extra in ([], ["--overwrite"], ["--resume"]):
        assert main(["run", str(scenario_file), "--out", str(tmp_path / "out"), *extra]) == 2
        assert "it is a symlink" in one_line(capsys.readouterr().err)
    assert [p.name for p in elsewhere.iterdir()] == ["keep.txt"]


class StopAt(Callback):
    """Stops the run at round 1 of its second (algorithm, seed) run."""

    def __init__(self):
        self.runs = 0

    def on_start(self, alg) -> None:
        self.runs += 1

    def on_round(self, alg, t: int) -> None:
        if self.runs == 2 and t == 1:
            raise KeyboardInterrupt


def test_resume_removes_the_partial_runs_analyses_and_figures(scenario_file, tmp_path, capsys):
    sc = Scenario(SMALL)
    with pytest.raises(KeyboardInterrupt):
        run(sc, out=tmp_path, quiet=True, callbacks=[StopAt()])
    folder = tmp_path / "tiny"
    assert not (folder / LOCK).exists()                          # released on the way out
    assert main(["analyze", str(folder)]) == 0
    assert main(["figures", str(folder), "--only", "accuracy"]) == 0
    capsys.readouterr()
    derived = ["analysis.json", "analysis.csv", "graphs/local_seed0_collab.graphml",
               "figures/accuracy_vs_rounds.png"]
    assert all((folder / n).is_file() for n in derived) and set(derived) <= recorded(folder)
    (folder / "notes.txt").write_text("mine")
    killed = folder / ".metrics.csv.k1ll3d_x"          # the temporary file of a killed write
    killed.write_text("half a table")
    res = run(sc, out=tmp_path, quiet=True, resume=True)
    assert not res.incomplete and not any((folder / n).exists() for n in derived)
    assert not killed.exists()
    assert not set(derived) & recorded(folder) and (folder / "notes.txt").read_text() == "mine"
    assert (folder / MANIFEST).is_file()

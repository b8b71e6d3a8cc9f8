"""Results folders: writes stay inside, files get the umask, one folder holds exactly one run."""
from __future__ import annotations

import os
import shutil
import stat

import numpy as np
import pytest
import yaml

from netsim import Results, Scenario, run
from netsim.cli import main
from netsim.errors import ConfigError
from netsim.results import INCOMPLETE, ResultsWriter
from netsim.results.manifest import record

from helpers import TINY

SMALL = dict(TINY, algorithms=["local", "sgp"], schedule={"rounds": 2, "eval_every": 2})


@pytest.fixture
def scenario_file(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(SMALL))
    return path


@pytest.mark.parametrize("name", [".", "..", "../../escape", "/tmp/abs", "a/b", "a..b",
                                  ".hidden", "a b", "-flag"])
def test_unsafe_names_and_labels_are_refused(name):
    with pytest.raises(ConfigError, match=r"^name: .*allowed: a name of (at most \d+ )?letters"):
        Scenario(SMALL).with_overrides({"name": name}).resolve()
    with pytest.raises(ConfigError, match=r"^algorithms\[0\]\.label: "):
        Scenario(SMALL).with_overrides({"algorithms": [{"name": "local", "label": name}]}).resolve()


def test_safe_names_pass():
    cfg = Scenario(SMALL).with_overrides({"name": "run-1.2_x+y", "algorithms.sgp.label": "SGP.v2"}
                                         ).resolve()
    assert cfg["name"] == "run-1.2_x+y" and cfg["algorithms"][1]["label"] == "SGP.v2"


def test_cli_escaping_name_writes_nothing(scenario_file, tmp_path, capsys):
    out = tmp_path / "a" / "b" / "out"
    assert main(["run", str(scenario_file), "--out", str(out), "--set", "name=../../escape"]) == 2
    assert capsys.readouterr().err.startswith("netsim: error: name: got '../../escape'")
    assert main(["run", str(scenario_file), "--out", str(out),
                 "--set", "algorithms.0.label=../../../x"]) == 2
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["tiny.yaml"]      # nothing written


def test_writer_refuses_paths_resolving_outside(tmp_path):
    cfg = Scenario(SMALL).resolve()
    writer = ResultsWriter(tmp_path / "out", cfg, [0])
    with pytest.raises(ValueError, match="outside the results folder"):
        writer.write("../x.txt", "x")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (writer.dir / "collab").symlink_to(outside)              # a link out of the folder
    with pytest.raises(ValueError, match="outside the results folder"):
        writer.write_arrays("collab", "local", 0, W=np.zeros(1))
    assert not any(outside.iterdir()) and not (tmp_path / "x.txt").exists()


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o027, 0o640)])
def test_result_files_get_the_umask(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        res = run(Scenario(SMALL), out=tmp_path, quiet=True)
    finally:
        os.umask(old)
    for name in ("config.yaml", "metrics.csv", "summary.json", "collab/sgp_seed0.npz"):
        assert stat.S_IMODE((res.dir / name).stat().st_mode) == mode, name


def test_other_run_is_refused_then_overwritten(scenario_file, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", str(scenario_file), "--out", str(out)]) == 0
    folder = out / "tiny"
    assert (folder / "links" / "sgp_seed0.npz").is_file() and not (folder / INCOMPLETE).exists()
    capsys.readouterr()
    fewer = ["--set", "algorithms=[local]"]
    assert main(["run", str(scenario_file), "--out", str(out), *fewer]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(folder) in err and "--overwrite" in err
    assert (folder / "links" / "sgp_seed0.npz").is_file()                 # untouched
    assert main(["run", str(scenario_file), "--out", str(out), *fewer, "--seeds", "1"]) == 2
    assert main(["run", str(scenario_file), "--out", str(out), *fewer, "--overwrite"]) == 0
    assert not (folder / "links").exists() and not (folder / "collab" / "sgp_seed0.npz").exists()
    assert list(Results(folder).summary["algorithms"]) == ["local"]


def test_same_run_starts_afresh_and_python_api_overwrites(tmp_path):
    first = run(Scenario(SMALL), out=tmp_path, quiet=True)
    metrics = (first.dir / "metrics.csv").read_text()
    (first.dir / "figures").mkdir()
    (first.dir / "figures" / "stale.png").write_text("old")
    record(first.dir, [first.dir / "figures" / "stale.png"])       # as if netsim had drawn it
    again = run(Scenario(SMALL), out=tmp_path, quiet=True, threads=2)    # threads: same run
    assert (again.dir / "metrics.csv").read_text() == metrics
    assert not (again.dir / "figures" / "stale.png").exists()
    other = Scenario(SMALL).with_overrides({"train.lr": 0.2})
    with pytest.raises(ConfigError, match=r"^results folder: .*add overwrite=True to replace"):
        run(other, out=tmp_path, quiet=True)
    assert run(other, out=tmp_path, quiet=True, overwrite=True).config["train"]["lr"] == 0.2


@pytest.mark.parametrize("left", [
    {".INCOMPLETE.k1wq_8zx": "seeds: [0]"},                              # killed writing it
    {"INCOMPLETE": "seeds: [0]\n", ".config.yaml.x8_z0q3m": "name: ti"},  # ... writing config
    {"INCOMPLETE": "seeds: [0]\n", ".netsim.manifest.3jt0ab7c": "I"}])     # ... its manifest
def test_run_killed_before_any_result_starts_afresh(tmp_path, left):
    """A run killed inside one of its first writes leaves a temporary file and no config.yaml
    yet: the same run (a sweep's relaunch) or another one starts afresh there."""
    folder = tmp_path / "tiny"
    for lr in (SMALL["train"]["lr"], 0.2):
        folder.mkdir()
        for name, text in left.items():
            (folder / name).write_text(text)
        (folder / ".netsim.manifest").write_text("INCOMPLETE\nconfig.yaml\n")
        res = run(Scenario(SMALL).with_overrides({"train.lr": lr}), out=tmp_path, quiet=True)
        assert not res.incomplete and res.config["train"]["lr"] == lr
        assert not [p.name for p in folder.iterdir() if p.name.startswith((".INCOMPLETE.",
                                                                            ".config.yaml."))]
        shutil.rmtree(folder)


def test_foreign_folder_is_never_cleared(tmp_path):
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "notes.txt").write_text("mine")
    for overwrite in (False, True):
        with pytest.raises(ConfigError, match="it holds notes.txt, which netsim did not write"):
            run(Scenario(SMALL), out=tmp_path, quiet=True, overwrite=overwrite)
    assert (tmp_path / "tiny" / "notes.txt").read_text() == "mine"


def test_interrupted_run_is_marked_and_analyze_figures_warn(tmp_path, monkeypatch, capsys):
    from netsim.running.recorder import Recorder

    finish = Recorder.finish
    calls = []

    def dies_on_second(self, alg):
        calls.append(self.label)
        if len(calls) == 2:
            raise KeyboardInterrupt
        finish(self, alg)
    monkeypatch.setattr(Recorder, "finish", dies_on_second)
    with pytest.raises(KeyboardInterrupt):
        run(Scenario(SMALL), out=tmp_path, quiet=True)
    folder = tmp_path / "tiny"
    assert Results(folder).incomplete
    assert yaml.safe_load((folder / INCOMPLETE).read_text()) == {"seeds": [0]}
    capsys.readouterr()
    assert main(["analyze", str(folder)]) == 0
    assert "incomplete run" in capsys.readouterr().err
    assert main(["figures", str(folder), "--only", "accuracy"]) == 0
    assert "incomplete run" in capsys.readouterr().err
    monkeypatch.setattr(Recorder, "finish", finish)
    assert not run(Scenario(SMALL), out=tmp_path, quiet=True).incomplete   # the same run again

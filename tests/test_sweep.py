"""Sweeps: expansion, resumption after a kill, equality with plain runs, confidence intervals."""
from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
import yaml

from netsim import Scenario, run
from netsim.errors import ConfigError
from netsim.analysis.stats import mean_ci
from netsim.running.sweep import Sweep, run_sweep

from helpers import TINY


@pytest.fixture
def sweep_file(tmp_path):
    base = dict(TINY, schedule={"rounds": 2, "eval_every": 2})
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    sweep = {"scenario": "base.yaml", "name": "links",
             "overrides": {"algorithms": ["local", "sgp"]},
             "grid": {"network.links.p": [1.0, 0.3]}, "seeds": [0, 1],
             "executor": {"name": "serial"}}
    path = tmp_path / "links.yaml"
    path.write_text(yaml.safe_dump(sweep))
    return path


def test_expansion_one_run_per_algorithm_seed_and_point(sweep_file):
    cells = Sweep.load(sweep_file).cells()
    assert len(cells) == 2 * 2 * 2
    assert len({c.id for c in cells}) == 8
    assert {c.algorithm for c in cells} == {"local", "sgp"}
    assert {c.config["network"]["links"]["p"] for c in cells} == {1.0, 0.3}


def test_killed_sweep_resumes_only_missing_cells_with_same_aggregate(sweep_file, tmp_path):
    lines: list[str] = []
    root = run_sweep(sweep_file, out=tmp_path / "out", log=lines.append)
    full = pd.read_csv(root / "table.csv")
    assert len(full) == 8 and full["mean_accuracy"].notna().all()
    index = pd.read_csv(root / "index.csv")
    assert (index["status"] == "done").all()
    killed = index["id"].iloc[[1, 6]]
    for rid in killed:
        shutil.rmtree(root / "runs" / rid)          # as if the sweep died before these finished
    lines.clear()
    run_sweep(sweep_file, out=tmp_path / "out", log=lines.append)
    assert "6 already done, 2 to run" in lines[0]
    assert sum(": done" in ln for ln in lines) == 2
    again = pd.read_csv(root / "table.csv")
    same = [c for c in full.columns if c != "wall_time"]          # wall clock differs, nothing else
    pd.testing.assert_frame_equal(full[same].sort_values("id").reset_index(drop=True),
                                  again[same].sort_values("id").reset_index(drop=True))
    cells = pd.read_csv(root / "cells.csv")
    assert len(cells) == 4 and (cells["n_seeds"] == 2).all()
    assert {"robustness_mean_accuracy.png", "robustness_mean_accuracy.pdf"} <= \
        {p.name for p in (root / "figures").iterdir()}


def test_cell_equals_plain_run_of_its_config(sweep_file, tmp_path):
    root = run_sweep(sweep_file, out=tmp_path / "out", log=lambda s: None)
    rid = pd.read_csv(root / "index.csv")["id"].iloc[3]
    folder = root / "runs" / rid
    cfg = yaml.safe_load((folder / "config.yaml").read_text())
    res = run(Scenario(cfg), seeds=[cfg["seed"]], out=tmp_path / "plain", quiet=True)
    assert (res.dir / "metrics.csv").read_text() == (folder / "metrics.csv").read_text()


def test_improved_over_local_equals_a_plain_run_with_both_algorithms(sweep_file, tmp_path):
    root = run_sweep(sweep_file, out=tmp_path / "out", log=lambda s: None)
    table = pd.read_csv(root / "table.csv")
    assert (table.loc[table["algorithm"] == "local", "improved_over_local"] == 0).all()
    row = table[(table["algorithm"] == "sgp") & (table["network.links.p"] == 0.3)
                & (table["seed"] == 1)].iloc[0]
    cfg = yaml.safe_load((root / "runs" / row["id"] / "config.yaml").read_text())
    cfg["algorithms"] = [{"name": "local"}, cfg["algorithms"][0]]
    res = run(Scenario(cfg), seeds=[1], out=tmp_path / "plain", quiet=True)
    plain = res.summary["algorithms"]["sgp"]["improved_over_local"]
    assert 0 < plain < 1                      # a share that can tell the two computations apart
    assert row["improved_over_local"] == pytest.approx(plain)


def test_process_pool_gives_the_serial_numbers(sweep_file, tmp_path):
    raw = yaml.safe_load(sweep_file.read_text())
    raw.update(executor={"name": "local", "workers": 2}, seeds=[0],
               overrides={"algorithms": ["sgp"]})
    par = tmp_path / "par.yaml"
    par.write_text(yaml.safe_dump(raw))
    raw["executor"] = {"name": "serial"}
    ser = tmp_path / "ser.yaml"
    ser.write_text(yaml.safe_dump(raw))
    a = pd.read_csv(run_sweep(par, out=tmp_path / "a", log=lambda s: None) / "table.csv")
    b = pd.read_csv(run_sweep(ser, out=tmp_path / "b", log=lambda s: None) / "table.csv")
    cols = ["id", "mean_accuracy", "bytes_sent", "sim_time"]
    pd.testing.assert_frame_equal(a[cols].sort_values("id").reset_index(drop=True),
                                  b[cols].sort_values("id").reset_index(drop=True))


def test_fork_server_starts_early_only_for_a_local_pool(sweep_file, tmp_path):
    """``netsim sweep`` starts the pool's fork server before its own imports only where the
    sweep will use a pool of two or more workers."""
    from netsim.util.pool import start_early
    raw = yaml.safe_load(sweep_file.read_text())
    for executor, workers, expected in (({"name": "serial"}, None, False),
                                        ({"name": "local", "workers": 1}, None, False),
                                        ({"name": "local", "workers": 4}, 1, False),
                                        ({"name": "submitit"}, 2, False),
                                        ({"name": "local", "workers": 2}, None, True)):
        path = tmp_path / "s.yaml"
        path.write_text(yaml.safe_dump({**raw, "executor": executor}))
        assert start_early(path, workers) is expected, executor
    assert start_early(tmp_path / "missing.yaml", 2) is False


def test_failed_run_is_reported_and_others_finish(sweep_file, tmp_path):
    raw = yaml.safe_load(sweep_file.read_text())
    raw.update(seeds=[0], overrides={"algorithms": ["dpsgd"]},
               grid={"network.topology": ["ring", {"name": "erdos_renyi", "p": 0.5}]})
    path = tmp_path / "f.yaml"
    path.write_text(yaml.safe_dump(raw))
    root = run_sweep(path, out=tmp_path / "out", log=lambda s: None)
    index = pd.read_csv(root / "index.csv")
    assert sorted(index["status"]) == ["done", "failed"]
    failed = index[index["status"] == "failed"].iloc[0]
    assert "undirected" in failed["error"]
    assert (root / failed["folder"] / "error.txt").is_file()
    assert len(pd.read_csv(root / "table.csv")) == 1


def test_submitit_debug_executor(sweep_file, tmp_path):
    pytest.importorskip("submitit")
    raw = yaml.safe_load(sweep_file.read_text())
    raw.update(executor={"name": "submitit", "cluster": "debug"}, seeds=[0],
               grid={"network.links.p": [0.5]}, overrides={"algorithms": ["local"]})
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(raw))
    root = run_sweep(path, out=tmp_path / "out", log=lambda s: None)
    assert (pd.read_csv(root / "index.csv")["status"] == "done").all()


def test_bad_sweep_files(tmp_path, sweep_file):
    raw = yaml.safe_load(sweep_file.read_text())
    for bad, field in (({"grid": {"network.links.p": []}}, "sweep.grid.network.links.p"),
                       ({"executor": {"name": "mpi"}}, "sweep.executor.name"),
                       ({"seeds": [-1]}, "sweep.seeds[0]"),
                       ({"grid": {"network.links.p": [2.0]}}, "network.links.p")):
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump({**raw, **bad}))
        with pytest.raises(ConfigError) as err:
            Sweep.load(path).cells()
        assert str(err.value).startswith(field)


def test_confidence_interval_matches_t_formula():
    mean, lo, hi = mean_ci(np.array([1.0, 2.0, 3.0]))
    assert mean == 2.0
    assert hi - mean == pytest.approx(4.302652729911275 * 1.0 / np.sqrt(3))
    assert mean_ci(np.array([5.0])) == (5.0, 5.0, 5.0)


def test_cli_sweep(sweep_file, tmp_path, capsys):
    from netsim.cli import main

    assert main(["sweep", str(sweep_file), "--dry-run"]) == 0
    assert "links: 8 runs" in capsys.readouterr().out
    raw = yaml.safe_load(sweep_file.read_text())
    raw.update(seeds=[0], grid={"network.links.p": [0.5]}, overrides={"algorithms": ["local"]})
    one = tmp_path / "one.yaml"
    one.write_text(yaml.safe_dump(raw))
    assert main(["sweep", str(one), "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "links" / "cells.csv").is_file()
    raw["grid"] = {"network.links.p": [7]}
    one.write_text(yaml.safe_dump(raw))
    assert main(["sweep", str(one)]) == 2
    assert "network.links.p: got 7;" in capsys.readouterr().err

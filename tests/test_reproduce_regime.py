"""figures/reproduce.py's paper regime (docs/papers/reproduction.md, "The papers in their own
regime"): the learning-rate grid's runs, the tuning, trained and claims tables, checked against
numbers computed here from the folders' own files, on a shrunk copy of scenarios/regime/diple.yaml.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pandas as pd
import pytest

from netsim import Scenario
from netsim.analysis.paired import paired_difference

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("reproduce", ROOT / "figures" / "reproduce.py")
reproduce = sys.modules.setdefault("reproduce", importlib.util.module_from_spec(_spec))
if not hasattr(reproduce, "main"):
    _spec.loader.exec_module(reproduce)

#: 8 clients of 100 samples, a small MLP, 4 rounds (2 evaluations), 3 candidate peers
SHRUNK = (("clients", 8), ("data.dataset.samples", 800), ("schedule.rounds", 4),
          ("schedule.eval_every", 2), ("model", {"name": "mlp", "hidden": [16]}),
          ("algorithms.diple_paper.sample_peers", 3), ("algorithms.diple.sample_peers", 3),
          ("outputs.progress", False))
STUDY = reproduce.Study("regime/diple", (0, 1), SHRUNK, drop=("diple",), grid=(0.03, 0.3))
CLAIMS = (("DiPLe > Local", "diple_paper", "local"), ("APFL ≥ FedAvg", "apfl", "fedavg"))


def cells(doc: str, first: str) -> list[str]:
    """The cells of the table row whose first cell is ``first``."""
    line = next(x for x in doc.splitlines() if x.startswith(f"| {first} |"))
    return [c.strip() for c in line.strip("|").split("|")]


@pytest.fixture(scope="module")
def regime(tmp_path_factory):
    """The shrunk study and its two grid runs, written as ``--regime paper --run`` does."""
    out = tmp_path_factory.mktemp("regime")
    blocks = (reproduce.Block("regime_diple", STUDY, ("accuracy", "trained", "claims"),
                              claims=CLAIMS),
              reproduce.Block("regime_diple_tuning", STUDY, ("tuning",)))
    for study in (s for b in blocks for s in b.studies()):
        reproduce.run(study.load(), seeds=list(study.seeds), out=out, quiet=True, threads=1)
    return blocks, out


def test_every_regime_scenario_validates_and_names_its_labels():
    """Each paper's regime scenario is valid, and every label its claims and pairs name is one of
    its algorithms (a renamed label would fail only after an hour of runs)."""
    for blocks in reproduce.REGIME.values():
        for block in blocks:
            sc = block.study.load()
            sc.resolve()
            labels = {reproduce.label_of(a) for a in sc.raw["algorithms"]}
            named = {x for _, a, b in block.claims for x in (a, b)} | \
                {x for pair in block.pairs for x in pair}
            assert named <= labels, (block.key, named - labels)
            assert block.study.seeds == (0, 1, 2, 3, 4)
            if block.study in reproduce.LR_FROM:                # the same setting's protocol
                chose = reproduce.LR_FROM[block.study].load().raw["train"]["lr"]
                assert sc.raw["train"]["lr"] == chose
            else:
                assert len(block.study.grid) >= 2


def test_a_grid_run_drops_each_algorithms_own_lr():
    raw = {"name": "s", "clients": 2, "train": {"lr": 0.05, "batch_size": 4},
           "algorithms": ["local", {"name": "apfl", "train": {"lr": 0.01, "local_steps": 2}},
                          {"name": "fedavg", "train": {"lr": 0.2}}]}
    sc = Scenario(raw)
    assert reproduce.own_lrs(sc) == {"local": 0.05, "apfl": 0.01, "fedavg": 0.2}
    assert [reproduce.without_lr(a) for a in raw["algorithms"]] == [
        "local", {"name": "apfl", "train": {"local_steps": 2}}, {"name": "fedavg"}]
    grid = reproduce.tuning_studies(STUDY)
    assert [s.name for s in grid] == ["regime_diple_lr0.03", "regime_diple_lr0.3"]
    loaded = grid[1].load()
    assert loaded.raw["train"]["lr"] == 0.3
    assert set(reproduce.own_lrs(loaded).values()) == {0.3}
    assert "--set train.lr=0.3 --set name=regime_diple_lr0.3" in reproduce.command(grid[1], Path("r"))


@pytest.mark.parametrize("low, high, text, verdict", [
    (0.01, 0.03, "A > B", "reproduced"), (-0.01, 0.02, "A > B", "tie (interval contains 0)"),
    (-0.01, 0.02, "A ≥ B", "reproduced"), (-0.03, -0.01, "A ≥ B", "not reproduced (reversed)"),
    (-0.03, -0.01, "A > B", "not reproduced (reversed)")])
def test_claim_verdicts(low, high, text, verdict):
    assert reproduce.claim_verdict({"ci_low": low, "ci_high": high}, text) == verdict


def test_the_regime_tables_say_what_the_folders_hold(regime):
    (block, tuning), out = regime
    res = reproduce.Results(out / STUDY.name)
    text = reproduce.render(block, res, out / "figures")
    assert [s.name for s in tuning.studies()] == ["regime_diple_lr0.03", "regime_diple_lr0.3"]
    text += "\n" + reproduce.render(tuning, reproduce.Results(out / "regime_diple_lr0.03"),
                                    out / "figures")
    # tuning: seed 0's mean validation accuracy at the last evaluation, per lr; the best chosen
    for label, lr in reproduce.own_lrs(STUDY.whole.load()).items():
        row = cells(text[text.index("| algorithm | lr 0.03"):], label)
        scores = {}
        for grid in reproduce.tuning_studies(STUDY):
            m = pd.read_csv(out / grid.name / "metrics.csv")
            m = m[(m.algorithm == label) & (m.split == "val")]
            scores[grid.lr] = m[m["round"] == m["round"].max()].accuracy.mean()
        assert [float(c) for c in row[1:3]] == pytest.approx(list(scores.values()), abs=5e-5)
        chosen = max(scores, key=lambda g: (scores[g], -g))
        assert row[3] == f"{chosen:g}" and row[4].startswith(f"{lr:g}")
        assert row[4].endswith("≠") == (lr != chosen)
    # trained: the final and best of the mean test curve over seeds
    m = pd.read_csv(out / STUDY.name / "metrics.csv")
    m = m[(m.split == "test") & (m.algorithm == "local")]
    curve = m.groupby(["seed", "round"]).accuracy.mean().groupby("round").mean()
    row = cells(text[text.index("| algorithm | final"):], "local")
    assert float(row[1]) == pytest.approx(curve.iloc[-1], abs=5e-5)
    assert float(row[2]) == pytest.approx(curve.iloc[-2:].max(), abs=5e-5)
    assert float(row[3]) == pytest.approx(100 * (curve.iloc[-1] - curve.iloc[-2]), abs=5e-3)
    # claims: the paired interval and its verdict
    for claim, a, b in CLAIMS:
        d = paired_difference(res.summary, a, b)
        row = cells(text, claim)
        assert row[1] == f"{a} − {b}" and row[4] == reproduce.claim_verdict(d, claim)
        assert row[3] == ", ".join(f"{100 * v:+.2f}" for v in d["per_seed"])

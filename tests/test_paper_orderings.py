"""The orderings docs/papers/reproduction.md reports for the four paper scenarios on MNIST-1D,
and figures/reproduce.py, which regenerates that page's tables.

Each scenario runs shrunk (fewer clients, samples and rounds; budgets and sampled peers scaled by
the client ratio) and a test asserts the paper's orderings that are robust at that length; the
margins in the comments were measured on seeds 0, 1, 2 (more where said) before the assertion was
chosen. Orderings that only hold at the papers' length run the scenario as shipped and are marked
``slow`` (skipped by default; ``python -m pytest -m slow tests/test_paper_orderings.py``).
Claims netsim does not reproduce (reproduction.md: FedAvg+FT > Local and DPFL > random graph in
DPFL, SGP and PDBO-MTL > Local in PDBO, CoBo > Local and FC) are not asserted.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from algorithms.ggc import bggc, ggc
from helpers import build, play
from netsim import Scenario, run
from netsim.analysis.paired import paired_difference
from netsim.analysis.per_run import analyze_run
from netsim.analysis.stats import mean_ci

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("reproduce", ROOT / "figures" / "reproduce.py")
reproduce = sys.modules["reproduce"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reproduce)

#: 20 clients of 200 samples (before the split), 10 rounds
SMALL = {"clients": 20, "data.dataset.samples": 4000, "schedule.rounds": 10,
         "schedule.eval_every": 5}
PDBO_SMALL = {"clients": 20, "data.dataset.samples": 8000, "schedule.rounds": 3}
#: 14 clients in 4 label-permuted clusters of 3, 3, 4, 4 (500 samples each, as at N = 80)
COBO_SMALL = {"clients": 14, "data.partition.clusters": 4, "data.partition.sizes": [3, 3, 4, 4],
              "data.dataset.samples": 7000, "schedule.rounds": 200, "schedule.eval_every": 20}


def label(spec: str | dict) -> str:
    return spec if isinstance(spec, str) else spec.get("label", spec["name"])


def scaled(spec: str | dict, ratio: float) -> str | dict:
    """An algorithm spec with its peer budget and sampled peers times ``ratio`` (at least 1)."""
    if isinstance(spec, str):
        return spec
    return {**spec, **{k: max(1, int(spec[k] * ratio)) for k in ("budget", "sample_peers")
                       if isinstance(spec.get(k), int)}}


def shrunk(name: str, over: dict, keep: tuple[str, ...] | None = None) -> Scenario:
    """scenarios/<name>.yaml with the dotted overrides ``over`` (which set ``clients``), its
    budgets scaled to the new client count, only the ``keep`` labels (default all)."""
    sc = Scenario.load(ROOT / "scenarios" / f"{name}.yaml")
    ratio = over["clients"] / sc.raw["clients"]
    algs = [scaled(a, ratio) for a in sc.raw["algorithms"] if keep is None or label(a) in keep]
    # on the CPU, where the margins were measured: CUDA's kernels round differently, and a margin
    # under a point can flip there (an H100 gave dpfl_inf 0.7664 against pFedGraph's 0.7686)
    return sc.with_overrides({**over, "algorithms": algs, "outputs.figures": False,
                              "outputs.progress": False, "device": "cpu"})


def per_seed(summary: dict, key: str = "mean_accuracy") -> dict[str, dict[str, float]]:
    """``{seed: {label: value}}`` of summary.json."""
    out: dict[str, dict[str, float]] = {}
    for lab, s in summary["algorithms"].items():
        for seed, v in s["per_seed"].items():
            out.setdefault(seed, {})[lab] = v[key]
    return out


def folder_of(tmp_path_factory, sc: Scenario, seeds: list[int]):
    return run(sc, seeds=seeds, out=tmp_path_factory.mktemp(sc.name), quiet=True, threads=1)


@pytest.fixture(scope="module")
def diple(tmp_path_factory):
    """The shrunk DiPLe scenario, seeds 0 and 1 (also the reproduce.py test's folder)."""
    return folder_of(tmp_path_factory, shrunk("diple_100_mnist1d", SMALL), [0, 1])


# ---------------------------------------------------------------------------------- DPFL
def test_dpfl_personalised_methods_far_above_fedavg(tmp_path_factory):
    """Dir(0.1): every personalised method far above FedAvg, DPFL above pFedGraph.
    Margins (seeds 0, 1, 2; points): min personalised - FedAvg 48.5, 44.1, 33.5 (pFedGraph at
    seed 2); dpfl_inf - pFedGraph +0.75, +2.34, +13.0 (DPFL - Local +0.03, +1.84, +2.09: not
    robust here, see the slow test)."""
    res = folder_of(tmp_path_factory, shrunk("dpfl_100", SMALL), [0])
    acc = per_seed(res.summary)["0"]
    assert min(v for k, v in acc.items() if k != "fedavg") > acc["fedavg"] + 0.25
    assert acc["dpfl_inf"] > acc["pfedgraph"]


def test_dpfl_bggc_equals_ggc_on_the_scenario():
    """Theorem 1 on the scenario's data and models after preprocessing: with the same seed GGC
    and BGGC (which holds at most B_c received models) choose the same collaborators and the
    same aggregate, at every budget of the scenario (scaled: inf, 4, 2, 1)."""
    sc = shrunk("dpfl_100", SMALL, keep=("dpfl_inf", "dpfl_20", "dpfl_10", "dpfl_5"))
    for index in range(4):
        alg = build(sc, index=index)
        play(alg, range(alg.r0))
        clients = np.arange(alg.n)
        cand = alg.reachable.copy()
        np.fill_diagonal(cand, False)

        def fetch(ids: np.ndarray) -> tuple[torch.Tensor, np.ndarray]:
            return alg.bank.flat[torch.as_tensor(np.maximum(ids, 0))], ids >= 0
        for seed in range(3):
            a = ggc(clients, cand, alg.bank.flat, alg.weight, alg.cap, alg.reward,
                    np.random.default_rng(seed), alg.hp.tie)
            b = bggc(clients, cand, alg.bank.flat, alg.weight, alg.cap, alg.reward,
                     np.random.default_rng(seed), fetch, alg.cap or alg.n - 1, alg.hp.tie)
            np.testing.assert_array_equal(a.peers, b.peers)
            torch.testing.assert_close(a.model, b.model)
            assert alg.cap is None or a.peers.sum(1).max() == alg.cap      # not vacuous


@pytest.mark.slow
def test_dpfl_beats_local_at_every_budget_at_full_length(tmp_path_factory):
    """DPFL > Local at every budget, paired 95% interval above 0 over the doc's 5 seeds
    (reproduction.md: +0.54 to +0.92 points), and DPFL (B_c = inf) > FedAvg+FT (+1.95)."""
    budgets = ("dpfl_inf", "dpfl_20", "dpfl_10", "dpfl_5")
    sc = reproduce.DPFL.load()
    sc = sc.with_overrides({"algorithms": [a for a in sc.raw["algorithms"]
                                           if label(a) in ("local", "fedavg_ft", *budgets)]})
    summary = folder_of(tmp_path_factory, sc, list(reproduce.DPFL.seeds)).summary
    for a, b in [(dpfl, "local") for dpfl in budgets] + [("dpfl_inf", "fedavg_ft")]:
        assert paired_difference(summary, a, b)["ci_low"] > 0, (a, b)


# ---------------------------------------------------------------------------------- DiPLe
def test_diple_above_apfl_local_and_fedavg(diple):
    """DiPLe > APFL, Local and FedAvg on every seed. Margins (seeds 0-4; points): DiPLe - APFL
    +44.6, +24.4, +12.5, +22.9, +30.6; DiPLe - Local +1.07, +1.86, +1.08, +1.22, +1.50;
    DiPLe - FedAvg > 48."""
    for seed, acc in per_seed(diple.summary).items():
        assert acc["diple"] > max(acc["apfl"], acc["local"], acc["fedavg"] + 0.3), seed


@pytest.mark.slow
def test_diple_beats_local_with_a_directed_graph_at_full_length(tmp_path_factory):
    """Over the doc's 5 seeds: DiPLe > APFL and > Local (paired interval above 0), and the
    learned graph is strongly directed (asymmetry 87-99% per seed; 60-100% on the short run, one
    edge at seed 0, too few edges to test there)."""
    res = folder_of(tmp_path_factory, reproduce.DIPLE.load(), list(reproduce.DIPLE.seeds))
    for other in ("apfl", "local"):
        assert paired_difference(res.summary, "diple", other)["ci_low"] > 0, other
    for seed in reproduce.DIPLE.seeds:
        assert analyze_run(res, "diple", seed)["asymmetry"] > 75.0


# ---------------------------------------------------------------------------------- PDBO
def test_pdbo_learned_weights_beat_sgp(tmp_path_factory):
    """PDBO-MTL and PDBO-MTL (local) > SGP (uniform weights), PDBO-MTL ≈ PDBO-MTL (local)
    (the paper's 82.8 = 82.8). Margins (seeds 0, 1, 2; points): PDBO-MTL - SGP +13.4, +12.6,
    +8.5; PDBO-MTL (local) - SGP +13.3, +12.4, +8.7; PDBO-MTL - PDBO-MTL (local) +0.09, +0.23,
    -0.21."""
    res = folder_of(tmp_path_factory, shrunk("pdbo_100_mnist1d", PDBO_SMALL), [0])
    acc = per_seed(res.summary)["0"]
    assert min(acc["pdbo_mtl"], acc["pdbo_mtl_local"]) > acc["sgp"] + 0.05
    assert abs(acc["pdbo_mtl"] - acc["pdbo_mtl_local"]) < 0.01


# ---------------------------------------------------------------------------------- CoBo
def test_cobo_oracle_first_and_learned_graphs_above_fedavg(tmp_path_factory):
    """Conflicting (label-permuted) clusters: the Oracle is at least every method, the learned
    collaboration graphs (CoBo, FC) beat FedAvg and CoBo's finds the clusters. Margins (seeds 0,
    1, 2; points): Oracle - best other +1.20, +2.80, +2.23; CoBo - FedAvg +10.7, +10.4, +5.7;
    FC - FedAvg +11.3, +11.9, +8.7; CoBo's cluster precision 0.82, 1.00, 0.94 (FedAvg's
    all-to-all matrix 0.20). Not robust here: IFCA - FedAvg +2.80, +1.72, +0.74; CoBo - Local
    +1.43, +0.68, -0.91."""
    res = folder_of(tmp_path_factory, shrunk("cobo_cross_device_mnist1d", COBO_SMALL), [0])
    acc = per_seed(res.summary)["0"]
    assert acc["oracle"] >= max(acc.values())
    assert min(acc["cobo"], acc["fc"]) > acc["fedavg"] + 0.03
    assert res.summary["algorithms"]["cobo"]["collab_precision"] > 0.6


# ---------------------------------------------------------------------------------- reproduce.py
DOC = """intro
<!-- reproduce:diple -->
old table
<!-- /reproduce:diple -->
prose kept
<!-- reproduce:diple_graph -->
<!-- /reproduce:diple_graph -->
"""


def cells(doc: str, first: str) -> list[str]:
    """The cells of the table row whose first cell is ``first``."""
    line = next(x for x in doc.splitlines() if x.startswith(f"| {first} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def interval(cell: str) -> tuple[float, float]:
    """``"m ± h pts"`` as (m, h)."""
    m, h = cell.removesuffix(" pts").split(" ± ")
    return float(m), float(h)


def test_reproduce_writes_the_tables_between_the_markers(diple, tmp_path, capsys):
    doc = tmp_path / "doc.md"
    doc.write_text(DOC)
    results = diple.dir.parent
    assert reproduce.main(["--results", str(results), "--only", "diple", "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith("intro\n<!-- reproduce:diple -->\n| algorithm | mean acc (±95% CI) |")
    assert "old table" not in text and "\n<!-- /reproduce:diple -->\nprose kept\n" in text
    s = diple.summary["algorithms"]
    for lab in ("local", "fedavg", "apfl", "diple"):
        row = cells(text, lab)
        vals = [s[lab]["per_seed"][k]["mean_accuracy"] for k in ("0", "1")]
        mean, low, high = mean_ci(vals)
        assert interval(row[1]) == pytest.approx((mean, (high - low) / 2), abs=1e-4)
        assert row[3].startswith(f"{vals[0]:.4f}/")
    d = paired_difference(diple.summary, "diple", "apfl")
    row = cells(text, "diple − apfl")
    assert interval(row[1]) == pytest.approx((100 * d["mean"], 50 * (d["ci_high"] - d["ci_low"])),
                                             abs=0.01)
    assert row[2] == ", ".join(f"{100 * v:+.2f}" for v in d["per_seed"])
    assert cells(text, "diple")[0] == "diple" and "| diple | asymmetry (%) |" in text
    assert (tmp_path / "reproduction" / "diple_accuracy.png").stat().st_size > 1000
    assert "](reproduction/diple_accuracy.png)" in text
    assert "seeds [0, 1], the doc's runs [0, 1, 2, 3, 4]" in capsys.readouterr().err


def test_reproduce_names_each_missing_folder(diple, tmp_path, capsys):
    doc = tmp_path / "doc.md"
    doc.write_text(DOC)
    assert reproduce.main(["--results", str(diple.dir.parent), "--doc", str(doc)]) == 1
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("missing: ")]
    assert [x.split()[1] for x in err] == [
        str(diple.dir.parent / name) for name in ("dpfl_100", "pdbo_100_mnist1d",
                                                  "pdbo_100_mnist1d_lr0.1",
                                                  "cobo_cross_device_mnist1d",
                                                  "cobo_cross_device_mnist1d_tuned")]
    assert "| diple |" in doc.read_text()            # the folders present are still written

"""Results over simulated time (docs/async.md, "Results"): the time to a target accuracy is the
first crossing of the mean test accuracy (null when never reached); an event-driven run's
recorded staleness and idle times are what its event trace says; summary.json, the arrays, the
figures and a sweep over an event-driven scenario are written."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from async_helpers import SCENARIOS, scenario
from helpers import TINY
from netsim import Scenario, run
from netsim.analysis.clocks import STALENESS_KEYS, clock_stats, time_to_accuracy
from netsim.errors import ConfigError
from netsim.running.loop import build_algorithm
from netsim.running.sweep import run_sweep


def times_to_accuracy(metrics: pd.DataFrame,
                      targets: list[float]) -> dict[tuple[str, int], dict[str, float | None]]:
    """:func:`time_to_accuracy` of every (algorithm, seed) of a metrics.csv table, recomputed from
    the mean test accuracy over clients at each evaluation (what summary.json must say)."""
    test = metrics[metrics["split"] == "test"]
    curves = (test.groupby(["algorithm", "seed", "round"], sort=False)
              .agg(sim_time=("sim_time", "first"), accuracy=("accuracy", "mean")).reset_index())
    return {(alg, int(seed)): time_to_accuracy(g["sim_time"].to_numpy(),
                                               g["accuracy"].to_numpy(), targets)
            for (alg, seed), g in curves.groupby(["algorithm", "seed"], sort=False)}


def test_time_to_accuracy_is_the_first_crossing_of_the_mean():
    """Two clients; (a, 0) crosses 0.5 at its second evaluation (t = 0.7: the mean of 0.4 and
    0.6; a later dip does not matter) and 0.75 at its last; (a, 1) never reaches 0.75; (b, 0)
    starts above 0.5 (t = 0)."""
    evals = {("a", 0): ([0.0, 0.7, 1.5, 2.25], [(0.2, 0.2), (0.4, 0.6), (0.3, 0.5), (0.7, 0.9)]),
             ("a", 1): ([0.0, 1.0], [(0.5, 0.5), (0.7, 0.7)]),
             ("b", 0): ([0.0, 2.0], [(0.6, 0.5), (0.9, 0.9)])}
    rows = [(alg, seed, r, t, c, split, acc[c], 1.0)
            for (alg, seed), (times, accs) in evals.items()
            for r, (t, acc) in enumerate(zip(times, accs)) for c in range(2)
            for split in ("val", "test")]
    metrics = pd.DataFrame(rows, columns=["algorithm", "seed", "round", "sim_time", "client",
                                          "split", "accuracy", "loss"])
    metrics.loc[metrics["split"] == "val", "accuracy"] = 1.0      # only test counts
    got = times_to_accuracy(metrics, [0.5, 0.75])
    assert got == {("a", 0): {"0.5": 0.7, "0.75": 2.25}, ("a", 1): {"0.5": 0.0, "0.75": None},
                   ("b", 0): {"0.5": 0.0, "0.75": 2.0}}
    assert time_to_accuracy(np.array([0.0, 1.0]), np.array([np.nan, 0.4]), [0.5]) == {"0.5": None}


@pytest.mark.parametrize("targets", [[1.5], [-0.1], "0.8", [0.5, "x"]])
def test_bad_targets_name_the_field(targets):
    with pytest.raises(ConfigError, match=r"outputs\.targets.*\[0\.0, 1\.0\]"):
        Scenario(scenario({"outputs.targets": targets})).resolve()


def _reports(raw: dict, index: int) -> tuple[object, list]:
    """Play algorithm ``index`` of ``raw`` to the end; return it and its windows' reports."""
    alg, reports = build_algorithm(raw, index), []

    def emit(hook: str, *args) -> None:
        if hook == "on_report":
            reports.append(args[0])
    alg.run_windows(emit)
    return alg, reports


@pytest.mark.parametrize("index, merge", [(0, "average"), (1, "use")],
                         ids=["adpsgd", "async_push"])
def test_staleness_is_the_age_in_the_event_trace(index, merge):
    """Every merge reported (AD-PSGD: the receiver of a request averaging with the requester's
    model; push: a wake summing in the newest message of an in-edge) is a trace row of that kind
    whose age is its time less the send time of the message it names, and vice versa."""
    alg, reports = _reports(scenario(SCENARIOS["failures"]), index)
    got = {k: np.concatenate([r.staleness[k] for r in reports]) for k in ("client", "time",
                                                                          "age")}
    rows = alg.net.events.rows
    sent = {m: t for t, _, kind, _, m in rows if kind == "send"}
    used = [(c, t, t - sent[m]) for t, c, kind, _, m in rows if kind == merge]
    assert len(used) > 20
    want = np.array(used).T
    np.testing.assert_array_equal(got["client"], want[0])
    np.testing.assert_array_equal(got["time"], want[1])
    np.testing.assert_array_equal(got["age"], want[2])
    assert (got["age"] > 0).all()


@pytest.mark.parametrize("index", [0, 1], ids=["adpsgd", "async_push"])
def test_idle_is_the_time_outside_computations(index):
    """Without failures every computation completes: a client's idle time is the run's length
    less its computations (wake to finish in the trace; the last one until the end if it is
    still running), window by window summing to that."""
    alg, reports = _reports(scenario(SCENARIOS["loss"]), index)
    idle = np.stack([r.idle for r in reports])
    trace = alg.net.events.arrays()
    end = alg.net.now
    busy = np.zeros(alg.n)
    for i in range(alg.n):
        wakes = trace["time"][(trace["client"] == i) & (trace["kind"] == "wake")]
        ends = trace["time"][(trace["client"] == i) & (trace["kind"] == "finish")]
        ends = np.append(ends, [end] * (len(wakes) - len(ends)))
        busy[i] = (ends - wakes).sum()
    np.testing.assert_allclose(idle.sum(0), end - busy, atol=1e-9)
    assert (idle >= -1e-12).all() and idle.shape == (len(reports), alg.n)
    if index == 1:                                   # push wakes again as soon as it is done
        np.testing.assert_allclose(idle, 0.0, atol=1e-12)
    else:                                            # AD-PSGD waits for its replies
        assert (idle.sum(0) > 0).all()


def same_times(got: dict, want: dict) -> None:
    """Times to accuracy of summary.json against those of metrics.csv (6 significant digits)."""
    assert got.keys() == want.keys()
    for key, t in want.items():
        assert got[key] is None if t is None else got[key] == pytest.approx(t, rel=1e-5)


def test_event_driven_run_writes_its_clocks_summary_and_figures(tmp_path):
    """One run: staleness/ and idle/ arrays, summary.json's statistics of them and its time to
    accuracy from metrics.csv, network totals summed from network.csv, and the figures."""
    raw = scenario({"outputs.figures": True, "outputs.trace": True,
                    "outputs.targets": [0.3, 0.99]})
    res = run(Scenario(raw), out=tmp_path, quiet=True)
    summary = res.summary["algorithms"]
    net = res.network
    want = times_to_accuracy(res.metrics, [0.3, 0.99])
    for alg in ("adpsgd", "async_push"):
        entry, seed = summary[alg], summary[alg]["per_seed"]["0"]
        arrays = {k: res.arrays(k, alg, 0) for k in ("staleness", "idle")}
        assert set(arrays["staleness"]) == {"client", "time", "age", "window"}
        assert arrays["idle"]["idle"].shape == (3, 6)
        stats = clock_stats(arrays)
        assert {k: seed[k] for k in stats} == stats
        assert seed["staleness_max"] == arrays["staleness"]["age"].max()
        assert all(entry[k] == seed[k] for k in STALENESS_KEYS)
        same_times(seed["time_to_accuracy"], want[(alg, 0)])
        assert seed["time_to_accuracy"]["0.99"] is None
        assert entry["time_to_accuracy"] == seed["time_to_accuracy"]
        assert entry["target_reached"] == {k: float(v is not None)
                                           for k, v in want[(alg, 0)].items()}
        rows = net[net["algorithm"] == alg]
        assert len(rows) == 3
        for key in ("bytes_sent", "messages_sent", "messages_delivered"):   # csv: 6 digits
            assert seed[key] == pytest.approx(rows[key].sum(), rel=1e-5)
    figures = {p.name for p in (res.dir / "figures").iterdir()}
    assert {"accuracy_vs_time.png", "accuracy_vs_rounds.png", "staleness.png",
            "staleness.txt"} <= figures
    json.dumps(res.summary, allow_nan=False)              # nulls, never NaN


def test_round_based_run_gets_time_to_accuracy_from_sim_time(tmp_path):
    """A round-based run's time to accuracy comes from its evaluations' simulated time; with no
    targets summary.json has no such key (round-based results are unchanged)."""
    raw = {**TINY, "algorithms": ["local", "sgp"], "outputs": {**TINY["outputs"],
                                                                "targets": [0.12, 1.0]}}
    res = run(Scenario(raw), out=tmp_path, quiet=True)
    want = times_to_accuracy(res.metrics, [0.12, 1.0])
    for alg in ("local", "sgp"):
        seed = res.summary["algorithms"][alg]["per_seed"]["0"]
        same_times(seed["time_to_accuracy"], want[(alg, 0)])
        assert not any(k in seed for k in STALENESS_KEYS)
    assert want[("sgp", 0)]["0.12"] > 0 and want[("sgp", 0)]["1"] is None


def test_sweep_over_an_event_driven_scenario(tmp_path):
    """``netsim sweep`` over a tiny event-driven scenario: two cells (message loss), a table row
    each, with the runs' staleness arrays."""
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(scenario({"schedule.until": 0.4})))
    sweep = {"scenario": "base.yaml", "name": "async_loss", "overrides": {"algorithms":
                                                                          ["adpsgd"]},
             "grid": {"network.loss.p": [0.0, 0.5]}, "seeds": [0],
             "executor": {"name": "serial"}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    root = run_sweep(tmp_path / "sweep.yaml", out=tmp_path / "out", log=lambda line: None)
    table = pd.read_csv(root / "table.csv")
    assert len(table) == 2 and table["mean_accuracy"].notna().all()
    assert sorted(table["messages_dropped"] > 0) == [False, True]
    assert len(list(root.glob("runs/*/staleness/adpsgd_seed0.npz"))) == 2

"""Round reports (netsim.sim.facade.RoundReport): the network gathers what each round delivered
between clients, algorithms return what only they know (CoBo's effective W), and the recorder
writes ``links/`` and ``effective/`` from the reports alone."""
from __future__ import annotations

import numpy as np

from netsim import run
from netsim.running.callbacks import Callback
from netsim.sim.facade import sorted_union
from netsim.sim.links_log import links_delivered

from helpers import DIGITS, PDBO, build, scenario, tiny


class Spy(Callback):
    """Every round's report, and the deliveries ``[N, N]`` of each exchange the round made."""

    def __init__(self):
        self.reports, self.exchanges = [], [[]]

    def on_start(self, alg) -> None:
        inner = alg.net.exchange

        def exchange(*args, **kwargs):
            ex = inner(*args, **kwargs)
            self.exchanges[-1].append(ex.delivered.copy())
            return ex

        alg.net.exchange = exchange

    def on_report(self, alg, report) -> None:
        self.reports.append(report)
        self.exchanges.append([])


def test_report_gathers_the_logged_deliveries_of_the_round():
    alg = build(tiny(algorithms=["sgp"]))
    e = alg.net.edges
    first = alg.exchange(np.ones(len(e), bool), 10)
    second = alg.exchange(e.src % 2 == 0, 10)
    third = alg.exchange(np.ones(len(e), bool), 10, logged=False)
    report = alg.net.report(0)
    delivered = first.per_edge["delivered"] | second.per_edge["delivered"]
    assert (first.per_edge["delivered"].sum(), delivered.sum()) == (10, 12)
    assert (third.per_edge["delivered"] & ~delivered).sum() == 3        # left out
    assert report.round == 0 and report.played
    np.testing.assert_array_equal(report.links, e.key[delivered])
    assert report.effective is None and report.extras == {}
    idle = alg.net.report(1)                              # nothing played since the last report
    assert not idle.played and idle.links is None
    alg.compute_phase()
    quiet = alg.net.report(2)                             # played, but exchanged nothing
    assert quiet.played and quiet.links is None


def test_sorted_union_is_numpys_unique_of_the_parts():
    """The union of a round's logged deliveries: sorted distinct keys, as ``np.unique`` gives
    them, for sorted parts (each exchange's), overlapping, empty or unsorted ones."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        parts = [np.sort(rng.choice(400, rng.integers(0, 300), replace=False))
                 for _ in range(rng.integers(2, 5))]
        parts.append(rng.integers(0, 400, rng.integers(0, 20)))            # unsorted, repeats
        got = sorted_union(parts)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, np.unique(np.concatenate(parts)))
    assert sorted_union([np.empty(0, np.int64)] * 2).size == 0


def test_links_log_is_the_union_of_each_rounds_deliveries(tmp_path):
    """DiPLe exchanges T + 1 times a round: links/ row t is the union of round t's deliveries."""
    spy = Spy()
    # on the CPU: the counts below follow DiPLe's choices, which CUDA's rounding can change
    sc = tiny(algorithms=[{"name": "diple", "stage2_steps": 2}], **{"clients": 6, "device": "cpu"})
    res = run(sc, out=tmp_path, quiet=True, callbacks=[spy])
    links = res.arrays("links", "diple", 0)
    assert list(links["rounds"]) == [0, 1, 2, 3]
    assert [len(x) for x in spy.exchanges[:-1]] == [3, 3, 3, 3]
    union = np.stack([np.logical_or.reduce(x) for x in spy.exchanges[:-1]])
    np.testing.assert_array_equal(links_delivered(links), union)
    assert list(union.sum((1, 2))) == [12, 11, 9, 9]                     # ring: 12 edges
    assert [r[0].sum() for r in spy.exchanges[:-1]] == [12, 10, 7, 9]    # stage I's alone
    for t, report in enumerate(spy.reports):
        np.testing.assert_array_equal(report.links, np.flatnonzero(union[t]))


def test_idle_rounds_have_no_row_and_servers_no_links(tmp_path):
    """PDBO-MTL with a fixed lambda solves in round 0 only; FedAvg never sends between clients."""
    spy = Spy()
    sc = scenario(PDBO, algorithms=[
        {"name": "pdbo_mtl", "label": "sgp", "hypergradient": "none", "learners": 2,
         "inner_steps": 3, "decay_last": [1]}, "fedavg"])
    res = run(sc, out=tmp_path, quiet=True, callbacks=[spy])
    assert [r.played for r in spy.reports] == [True, False, False, True, True, True]
    links = res.arrays("links", "sgp", 0)
    assert list(links["rounds"]) == [0]
    np.testing.assert_array_equal(links_delivered(links)[0], spy.exchanges[0][-1])  # last step
    assert spy.reports[3].links is None
    assert not (res.dir / "links" / "fedavg_seed0.npz").exists()


def test_cobo_effective_weights_are_kept_at_the_evaluated_rounds_only(tmp_path):
    spy = Spy()
    sc = scenario(DIGITS, **{"schedule.rounds": 7, "schedule.eval_every": 3})
    res = run(sc, out=tmp_path, quiet=True, callbacks=[spy])
    eff = res.arrays("effective", "cobo", 0)
    assert list(eff["rounds"]) == [3, 6, 7]
    assert list(res.arrays("collab", "cobo", 0)["rounds"]) == [0, 3, 6, 7]
    np.testing.assert_array_equal(
        eff["W"], np.stack([spy.reports[r - 1].effective for r in (3, 6, 7)]).astype(np.float32))
    assert eff["W"].dtype == np.float32 and eff["row_sum"].shape == (7, 6)
    np.testing.assert_array_equal(eff["row_sum"], [r.effective.sum(1) for r in spy.reports])
    np.testing.assert_array_equal(eff["pair_updates"],
                                  [r.extras["pair_updates"] for r in spy.reports])
    assert eff["pair_updates"].sum() > 0 and (eff["row_sum"] > 0).any()

"""Synchronous SGP and D-PSGD in the event-driven engine (algorithms/sync_sgp.py,
sync_dpsgd.py, round_barrier.py), replayed from the event trace: each client starts round r at
the first instant it has finished round r - 1 and every in-neighbour's round-(r - 1) message to
it is resolved (delivered, dropped, lost or not sent), never earlier or later; at that wake it
uses the round-(r - 1) messages and never a later round's. With frozen models SGP's push-sum
mass is conserved, and D-PSGD's models are the product of the Metropolis mixings that the trace
says happened. A planted barrier that stops waiting is caught."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
import torch

import algorithms.round_barrier as round_barrier
from async_helpers import SCENARIOS, models, play, scenario, spread
from netsim.runtime.mixing import metropolis_weights
from test_async_push import frozen_run

SYNC = {"algorithms": ["adpsgd", "sync_sgp"]}
BOTH = ["sync_sgp", "sync_dpsgd"]
#: finite bandwidth: a delivery is an event that resolves its message; none: every downlink
#: serves at once, messages resolve at their send (with their arrival time) and wait in inboxes
DOWNLINKS = {"events": {}, "inboxes": {"network.latency.bandwidth": None}}


def replay(rows: list[tuple]) -> dict:
    """From the trace (in event order): each message's round and resolution time, each
    client's finish time per round, and its wakes as (time, round, used message ids)."""
    finished: defaultdict[int, list[float]] = defaultdict(list)
    msg_round, resolved, to = {}, {}, {}
    silent: defaultdict[tuple[int, int], list[float]] = defaultdict(list)  # (dst, round)
    wakes: defaultdict[int, list[list]] = defaultdict(list)
    for t, c, kind, peer, m in rows:
        if kind == "finish":
            finished[c].append(t)
        elif kind in ("send", "lost"):
            msg_round[m], to[m] = len(finished[c]) - 1, peer
            if kind == "lost":
                resolved[m] = t
        elif kind in ("link_down", "blocked"):
            silent[(peer, len(finished[c]) - 1)].append(t)
        elif kind in ("deliver", "dropped"):
            resolved[m] = t
        elif kind == "wake":
            wakes[c].append([t, len(finished[c]), []])
        elif kind == "use":
            wakes[c][-1][2].append(m)
    return {"finished": finished, "round": msg_round, "resolved": resolved, "to": to,
            "silent": silent, "wakes": wakes}


def check_barrier(alg) -> int:
    """Every wake of round r >= 1 is at the latest of i's round-(r - 1) finish and the
    resolutions of its in-neighbours' round-(r - 1) messages; returns the wakes checked."""
    rep = replay(alg.net.events.rows)
    n, checked = alg.n, 0
    by_round: defaultdict[tuple[int, int], list[float]] = defaultdict(list)
    for m, r in rep["round"].items():
        if m in rep["resolved"]:
            by_round[(rep["to"][m], r)].append(rep["resolved"][m])
    for i, wakes in rep["wakes"].items():
        for t, r, used in wakes:
            assert all(rep["round"][m] < r for m in used)          # no later round's message
            if r == 0:
                continue
            heard = by_round[(i, r - 1)] + rep["silent"][(i, r - 1)]
            assert len(heard) == n - 1                              # every in-neighbour
            assert t == max([rep["finished"][i][r - 1], *heard])
            checked += 1
    return checked


@pytest.mark.parametrize("downlink", sorted(DOWNLINKS))
@pytest.mark.parametrize("algorithm", BOTH)
@pytest.mark.parametrize("name", ["loss", "stragglers"])
def test_each_round_starts_when_its_messages_are_resolved(name, algorithm, downlink):
    alg = play(scenario({**SCENARIOS[name], **DOWNLINKS[downlink], "algorithms": [algorithm]}), 0)
    assert alg.mail_on_wake == (downlink == "inboxes")
    assert check_barrier(alg) >= 30
    rounds = alg.steps_done
    assert rounds.max() - rounds.min() <= 1          # a complete graph moves in lockstep


@pytest.mark.parametrize("downlink", sorted(DOWNLINKS))
@pytest.mark.parametrize("algorithm", BOTH)
def test_a_round_uses_the_round_before_it(algorithm, downlink):
    """The messages used at round r's wake are of round r - 1 (SGP's running sums: a
    round-(r - 1) message delivered on an edge carries the older ones; D-PSGD: exactly the
    round-(r - 1) models delivered)."""
    alg = play(scenario({**SCENARIOS["loss"], **DOWNLINKS[downlink], "algorithms": [algorithm]}),
               0)
    rep = replay(alg.net.events.rows)
    delivered: defaultdict[tuple[int, int], set] = defaultdict(set)
    for t, c, kind, peer, m in alg.net.events.rows:
        if kind == "deliver":
            delivered[(c, rep["round"][m])].add(m)
    hits = 0
    for i, wakes in rep["wakes"].items():
        for t, r, used in wakes:
            rounds = [rep["round"][m] for m in used]
            assert all(q < r for q in rounds)
            if algorithm == "sync_dpsgd":
                assert set(used) == (delivered[(i, r - 1)] if r else set())
            hits += rounds.count(r - 1)
    assert hits > 50


def test_dpsgd_models_are_the_mixings_the_trace_says():
    """Frozen models (lr 0) under loss: replaying each wake's Metropolis mixing of the
    round-(r - 1) models it used, with the missing weight on the receiver, gives the models."""
    raw = scenario({**SCENARIOS["loss"], "algorithms": ["sync_dpsgd"],
                    "train": {"lr": 0.0, "batch_size": 4, "local_steps": 1}})
    start = {}

    def setup(alg):
        spread(alg.bank.flat)
        start["x"] = alg.bank.flat.double().clone()

    alg = play(raw, 0, setup=setup)
    rep = replay(alg.net.events.rows)
    n = alg.n
    w = np.asarray(metropolis_weights(~np.eye(n, dtype=bool)), float)
    sender = {m: c for t, c, kind, peer, m in alg.net.events.rows if kind == "send"}
    history = {(i, 0): start["x"][i] for i in range(n)}    # (client, round) -> x_i^round
    for r in range(1, int(alg.steps_done.max()) + 1):
        for i, wakes in rep["wakes"].items():
            got = [used for t, q, used in wakes if q == r]
            if not got:
                continue
            x = history[(i, r - 1)].clone()
            for m in got[0]:
                j = sender[m]
                x += w[i, j] * (history[(j, r - 1)] - history[(i, r - 1)])
            history[(i, r)] = x
    final = torch.stack([history[(i, max(q for c, q in history if c == i))] for i in range(n)])
    missed = sum(len(used) < n - 1 for wakes in rep["wakes"].values() for _, r, used in wakes
                 if r)
    assert missed > 5                                   # loss and links down did bite
    torch.testing.assert_close(models(alg).double(), final, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("downlink", sorted(DOWNLINKS))
@pytest.mark.parametrize("name", ["loss", "failures"])
def test_frozen_mass_conserved(name, downlink):
    error, gap = frozen_run({**SCENARIOS[name], **SYNC, **DOWNLINKS[downlink]})
    assert error < 1e-5
    if name == "loss":
        assert gap < 1e-3


@pytest.mark.parametrize("downlink", sorted(DOWNLINKS))
@pytest.mark.parametrize("algorithm", BOTH)
def test_planted_barrier_that_stops_waiting_is_caught(monkeypatch, algorithm, downlink):
    monkeypatch.setattr(round_barrier.RoundBarrier, "_need", lambda self, due, r: 0 * due)
    alg = play(scenario({**SCENARIOS["loss"], **DOWNLINKS[downlink], "algorithms": [algorithm]}),
               0)
    with pytest.raises(AssertionError):
        check_barrier(alg)


RELIABLE = {"network.links": "always", "algorithms": ["sync_fedavg"],
            "network.compute.stragglers": {"share": 0.34, "slowdown": 5.0},
            "data.partition": {"name": "dirichlet", "alpha": 0.3},      # unequal sizes
            "data.max_samples_per_client": 200}


def test_fedavg_server_model_is_the_replayed_rounds():
    """Reliable links, stragglers: each server update (trace row ``update``) comes when the
    round's last upload arrives, and averages, weighted by training-set size, the models of
    every client trained from the previous server model on its own batches (a sequential
    replay, one client at a time)."""
    start = {}

    def setup(alg):
        start["x"] = alg.server_model[0].clone()

    alg = play(scenario(RELIABLE), 0, setup=setup)
    x, uploads, updates = start["x"], [], 0
    steps, lr = alg.train.local_steps, alg.train.lr
    for t, c, kind, peer, m in alg.net.events.rows:
        if kind == "buffer":
            uploads.append((t, peer))
        elif kind == "update":
            assert sorted(i for _, i in uploads) == list(range(alg.n))
            assert t == max(when for when, _ in uploads)
            trained = []
            for _, i in sorted(uploads, key=lambda u: u[1]):
                y = x.clone()
                for q in range(steps):
                    bx, by = alg.batches.batch(np.array([i]), np.array([updates * steps + q]))
                    _, g = alg.bank.grad(bx, by, clients=torch.tensor([i]), flat=y[None])
                    y = y - lr * g[0]
                trained.append(y)
            w = alg.weight.double()
            x = ((w[:, None] * torch.stack(trained).double()).sum(0) / w.sum()).float()
            uploads, updates = [], updates + 1
    assert updates >= 5 and len(set(alg.weight.tolist())) > 1
    torch.testing.assert_close(alg.server_model[0], x, rtol=1e-4, atol=1e-5)


def test_fedavg_waits_for_the_slowest_upload():
    """Each round lasts until its last upload; a straggler's upload is the last of most."""
    alg = play(scenario(RELIABLE), 0)
    slow = set(np.flatnonzero(alg.net.compute_model.stragglers).tolist())
    last = []
    uploads = []
    for t, c, kind, peer, m in alg.net.events.rows:
        if kind == "buffer":
            uploads.append((t, peer))
        elif kind == "update":
            last.append(max(uploads)[1])
            uploads = []
    assert slow and sum(i in slow for i in last) >= len(last) - 1


@pytest.mark.parametrize("downlink", sorted(DOWNLINKS))
@pytest.mark.parametrize("algorithm", BOTH)
def test_clients_down_for_good_are_not_waited_for(algorithm, downlink):
    """A third of the clients crash for good at t = 0.2 s: on the complete graph every other
    client waited for them, and goes on without them to the end (0.6 s)."""
    alg = play(scenario({"network.failures": {"crash": {"share": 0.34, "at": 0.2}},
                         **DOWNLINKS[downlink], "algorithms": [algorithm]}), 0)
    crashed = alg.stopped
    assert crashed.sum() == 2
    last = defaultdict(float)
    for t, c, kind, peer, m in alg.net.events.rows:
        if kind == "finish":
            last[c] = t
    assert all(last[i] < 0.2 for i in np.flatnonzero(crashed))
    assert all(last[i] > 0.55 for i in np.flatnonzero(~crashed))
    assert alg.steps_done[~crashed].min() >= alg.steps_done[crashed].max() + 5

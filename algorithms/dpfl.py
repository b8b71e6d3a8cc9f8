"""DPFL (Kharrat, Canini, Horváth; docs/specifications/dpfl.md): decentralised personalised FL
over a directed collaboration graph built greedily under a per-client communication budget B_c.

Problem (Eq. 3): ``min_{w, C} sum_k p_k F_k(ŵ_k)``, ``ŵ_k = sum_{i in C_k ∪ {k}} p_i w_i / sum p_i``
(Eq. 4), ``|C_k| <= B_c``; i in C_k means k receives i's model. Alg. 1, alternating minimisation:

- **Preprocessing** (the first ``ceil(tau_init / E)`` rounds, so DPFL does the same number of local
  steps as the baselines, as the paper's "98 + 2 rounds"): every client trains ``tau_init`` local
  steps from the common initial model, then builds ``Ω_k = BGGC(k, [N] \\ {k}, B_c)`` (Alg. 3,
  Eq. 8) streaming at most B_c models per communication step (``ceil(N / B_c)`` steps per pass, two
  passes), and sets ``w_k`` to the p-average of the models of ``Ω_k ∪ {k}`` (line 4).
- **Training rounds**: E local steps; every client receives the models of ``Ω_k`` (|Ω_k| <= B_c);
  ``C_k = GGC(k, arrived ∩ Ω_k, B_c)`` (Alg. 2, Eq. 6) on the validation-loss reward (Eq. 7);
  ``w_k <- p-average over C_k ∪ {k}``. Ω_k is never pruned: a model that does not arrive is just
  not a candidate this round. With a GGC period P > 1 the rounds in between aggregate over the
  last C_k (``between: reuse``) or not at all (``between: local``, the authors' code).

Every model transfer is an engine message. The budget is the engine's per-node peer budget
(``network.budget.peers_per_round``), set from this algorithm's B_c (the smaller one wins when the
scenario sets one too) and counted per exchange (``Network.budget_window``): every communication
step, each BGGC batch included (``algorithms/dpfl_steps.py``), is a budget window of its own, so
no client receives more than B_c models in any step. ``links/`` has one row per round (the
models that arrived in any of its steps); ``graph/<label>_seed<k>.npz`` holds ``omega`` [N, N],
``used`` [R, N, N] = the peers each client aggregated in the ``rounds`` [R] from the graph's
construction on, and ``budget``.

The evaluated personal model is by default the one after the round's local training, before
its aggregation (``evaluate: trained``, the models the authors' code validates and tests);
``aggregated`` evaluates ŵ_k.

``dpfl_random`` is the ablation of the paper's Figure 3: the same schedule, budget and messages,
with Ω_k a uniformly random set of B_c candidates and C_k = all of Ω_k that arrived.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import math

import numpy as np
import torch

from algorithms import register
from algorithms.base import Algorithm
from algorithms.dpfl_budget import BUDGET_ALLOWED, peer_budget, random_peers
from algorithms.dpfl_steps import BudgetedSteps
from algorithms.ggc import Selection, ValidationReward, average, bggc, ggc
from algorithms.selection import BestValidation
from netsim.errors import ConfigError
from netsim.schema.params import Params, param

@dataclass(frozen=True)
class DPFLParams(Params):
    """DPFL's parameters."""

    budget: Any = param(None, "B_c: " + BUDGET_ALLOWED + "; 0.2 = 0.2 N")
    budget_counts_self: bool = param(False, "B_c counts the client itself, at most B_c - 1 peers "
                                     "(authors' code); false: B_c peers (paper, Eq. 3)")
    tau_init: int | None = param(None, "local SGD steps before the graph is built (Alg. 1 line 2); "
                                 "null = 2 x train.local_steps (paper: tau_init = 2 tau_train)",
                                 lo=1)
    period: int = param(1, "run GGC every P training rounds (Table 3)", lo=1)
    between: Literal["reuse", "local"] = param(
        "reuse", "rounds without GGC: aggregate over the last C_k (reuse) or not at all (local, "
        "the authors' code)")
    weighting: Literal["data", "uniform"] = param(
        "data", "p_i: train + validation sizes (paper and code) or uniform")
    momentum: Literal["keep", "reset"] = param(
        "keep", "momentum buffers after aggregation: keep (authors' code) or reset")
    local_only_group: str | None = param(
        None, "clients of this data group never select collaborators: they only train and send "
        "(Sec. 4.5, case 1)")
    tie: float = param(1.0, "probability of adding j when a = b = 0 (Alg. 2: 1 in the paper and "
                       "its code)", lo=0, hi=1)
    evaluate: Literal["trained", "aggregated"] = param(
        "trained", "the personal model: after the round's local training, before its aggregation "
        "(the models the authors' code saves and tests), or the aggregate ŵ_k of Eq. 4")
    report: Literal["current", "best_val"] = param(
        "current", "evaluated model: the current one, or each client's best-validation-accuracy "
        "model so far (paper Sec. 4.1)")


@register("dpfl")
class DPFL(BudgetedSteps, Algorithm):
    """DPFL: GGC/BGGC collaboration graph under a per-client budget B_c (peer to peer)."""

    group = "learned graph"  # the run table's group

    params = DPFLParams
    hp: DPFLParams

    def __init__(self, ctx):
        super().__init__(ctx)
        self.bank = self.new_bank()
        n = self.n
        cap = peer_budget(self.hp.budget, self.hp.budget_counts_self, n, "algorithms.budget")
        scenario_cap = self.net.peer_budget
        if scenario_cap is not None:
            cap = scenario_cap if cap is None else min(cap, scenario_cap)
        self.cap = cap
        self.net.peer_budget = cap
        self.net.budget_window = "exchange"                     # B_c per communication step
        sizes = (self.data.n["train"] + self.data.n["val"]).to(self.device, self.bank.flat.dtype)
        self.weight = sizes if self.hp.weighting == "data" else torch.ones_like(sizes)
        steps = self.train.local_steps
        self.tau = self.hp.tau_init or 2 * steps
        self.r0 = math.ceil(self.tau / steps)
        self.reward = ValidationReward(self.bank, self.data)
        group = self.hp.local_only_group
        self.runs = np.ones(n, bool) if group is None else np.asarray(self.data.group) != group
        if self.runs.all() and group is not None:
            raise ConfigError(f"algorithms.{self.ctx.spec['label']}.local_only_group", group,
                              "a group of the partition: "
                              + ", ".join(sorted(set(self.data.group))))
        self.reachable = self.net.in_edges()            # [dst, src]: candidate senders
        self.omega = np.zeros((n, n), bool)                     # Ω_k, fixed after preprocessing
        self.selected = np.zeros((n, n), bool)                  # C_k of the last GGC call
        self.used = np.zeros((n, n), bool)                      # peers aggregated this round
        self.payload = self.bank.size_bytes + 4                 # the model and its p_i
        self.log: dict[str, list] = {"used": [], "rounds": []}
        self.trained = self.bank.flat.clone()
        self.best = BestValidation(self.bank.flat, per_client=True)

    @classmethod
    def check_config(cls, spec: dict, cfg: dict, path: str) -> None:
        peer_budget(spec["budget"], spec["budget_counts_self"], cfg["clients"], path)
        steps = spec["train"]["local_steps"]
        r0 = math.ceil((spec["tau_init"] or 2 * steps) / steps)
        if r0 >= cfg["schedule"]["rounds"]:
            raise ConfigError(f"{path}.tau_init", spec["tau_init"] or f"null (= {2 * steps})",
                              f"fewer local steps than fit in schedule.rounds - 1 = "
                              f"{cfg['schedule']['rounds'] - 1} rounds of {steps} steps "
                              f"(preprocessing takes ceil(tau_init / local_steps) rounds)")

    # ------------------------------------------------------------------ graph steps
    def average_over(self, clients: np.ndarray, peers: np.ndarray) -> Selection:
        """``peers`` as C_k with the p-average of the models of C_k ∪ {k} (Eq. 4)."""
        members = peers.copy()
        members[np.arange(len(clients)), clients] = True
        return Selection(peers, average(members, self.bank.flat, self.weight))

    def build_graph(self, clients: np.ndarray, candidates: np.ndarray) -> Selection:
        """Ω_k = BGGC(k, candidates, B_c) and the average over Ω_k ∪ {k} (Alg. 1 lines 3-4)."""
        own = self.bank.flat[torch.as_tensor(clients, device=self.device)]
        return bggc(clients, candidates, own, self.weight, self.cap, self.reward, self.rng,
                    self.fetcher(clients), batch=self.cap or self.n - 1, tie=self.hp.tie)

    def select(self, clients: np.ndarray, arrived: np.ndarray) -> Selection:
        """C_k = GGC(k, arrived models of Ω_k, B_c) (Alg. 1 line 10)."""
        return ggc(clients, arrived, self.bank.flat, self.weight, self.cap, self.reward, self.rng,
                   self.hp.tie)

    # ------------------------------------------------------------------ rounds
    def round(self, t: int) -> None:
        self.used[:] = False
        if t < self.r0:
            self.preprocessing_round(t)
        else:
            self.training_round(t)
        if t >= self.r0 - 1:
            self.log["used"].append(self.used.copy())
            self.log["rounds"].append(t)
        if self.hp.report == "best_val":
            self.track_best()

    def preprocessing_round(self, t: int) -> None:
        """Alg. 1 lines 1-4: ``tau_init`` local steps spread over the first rounds, then BGGC."""
        steps = min(self.train.local_steps, self.tau - t * self.train.local_steps)
        done = self.compute_phase(active=self.net.alive(), steps=steps).finished
        self.local_sgd(self.bank, steps, clients=self.index(done, self.device))
        self.trained.copy_(self.bank.flat)
        if t < self.r0 - 1:
            return
        clients = np.flatnonzero(done & self.runs)
        sel = self.build_graph(clients, self.reachable[clients] & done[None, :])
        self.omega[clients] = sel.peers
        self.selected[clients] = sel.peers
        self.apply(clients, sel)

    def training_round(self, t: int) -> None:
        """Alg. 1 lines 6-12: local steps, receive from Ω_k, GGC, aggregate over C_k ∪ {k}."""
        t0 = self.net.now
        comp = self.compute_phase(active=self.net.alive())
        done = comp.finished
        self.local_sgd(self.bank, self.train.local_steps, clients=self.index(done, self.device))
        self.trained.copy_(self.bank.flat)
        greedy = (t - self.r0) % self.hp.period == 0
        if not greedy and self.hp.between == "local":
            return
        clients = np.flatnonzero(done & self.runs)
        pool = (self.omega if greedy else self.selected)[clients] & done[None, :]
        arrived = self.receive(clients, pool, ready=comp.finish_time, round_start=t0)
        if greedy:
            sel = self.select(clients, arrived)
            self.selected[clients] = sel.peers
        else:
            sel = self.average_over(clients, arrived)
        self.apply(clients, sel)

    def apply(self, clients: np.ndarray, sel: Selection) -> None:
        """``w_k <- ŵ_k`` (Eq. 4) for the listed clients."""
        idx = torch.as_tensor(clients, dtype=torch.long, device=self.device)
        self.used[clients] = sel.peers
        self.bank.set_rows(idx, sel.model)
        if self.hp.momentum == "reset":
            self.bank.reset_momentum(idx)

    def current_models(self) -> torch.Tensor:
        """The personal models of this round (``evaluate``)."""
        return self.trained if self.hp.evaluate == "trained" else self.bank.flat

    def track_best(self) -> None:
        """Keep each client's model with the best validation accuracy so far."""
        models = self.current_models()
        acc, loss = self.bank.evaluate(self.reward.x, self.reward.y, self.reward.mask, flat=models)
        self.best.offer(-loss if acc is None else acc, models)

    # ------------------------------------------------------------------ outputs
    def personal_models(self) -> torch.Tensor:
        return self.best.models if self.hp.report == "best_val" else self.current_models()

    def health(self) -> dict[str, torch.Tensor]:
        """The reported models and the models that train: under ``report: best_val`` the
        reported ones can stay finite while training has diverged."""
        return {"model": self.personal_models(), "training model": self.bank.flat}

    def collaboration(self) -> np.ndarray:
        """Row k: the p-weights of C_k ∪ {k} aggregated this round (identity without one)."""
        w = (self.used | np.eye(self.n, dtype=bool)) * self.weight.cpu().numpy()[None, :]
        return w / w.sum(1, keepdims=True)

    def extra_arrays(self) -> dict[str, dict[str, np.ndarray]]:
        """``graph/<label>_seed<k>.npz``: omega, the peers used per round, those rounds and
        the peer budget (-1: none)."""
        if not self.log["used"]:
            return {}
        return {"graph": {"omega": self.omega, "used": np.stack(self.log["used"]),
                          "rounds": np.asarray(self.log["rounds"]),
                          "budget": np.asarray(-1 if self.cap is None else self.cap)}}

@register("dpfl_random")
class DPFLRandom(DPFL):
    """DPFL with a random collaboration graph (Fig. 3 ablation): Ω_k uniformly random within B_c."""

    def build_graph(self, clients: np.ndarray, candidates: np.ndarray) -> Selection:
        return self.average_over(clients, self.receive(clients, random_peers(self.rng, candidates,
                                                                             self.cap)))

    def select(self, clients: np.ndarray, arrived: np.ndarray) -> Selection:
        return self.average_over(clients, arrived)

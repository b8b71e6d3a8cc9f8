"""DiPLe: learned directed collaboration graphs (Zheng, Naghizadeh, Yener); specification:
docs/specifications/diple.md.

Client i keeps a local model ``w_loc,i`` (``self.bank``), a mixture minimiser ``w_i``
(``self.mixer``) and row i of the directed graph ``A = [alpha_ij]`` with
``alpha_ii + sum_j alpha_ij = 1``. Round r of Alg. 1, all clients batched:

Stage I (learning the graph, ``algorithms/diple_graph.py``): E local SGD steps
``w_loc,i^{r,-1} -> w_loc,i^{r,0}``; every candidate j sends ``w_loc,j^{r,0}`` to i; for every
delivered pair, bisection with threshold eps on ``a in [0, 1]`` minimising
``f_i((1 - a) w_loc,i^{r,0} + a w_loc,j^{r,0})`` (eq. 3), with ``a < eps/2 -> 0``; the row is
normalised. All bisections of all clients and candidates run as one batch: each iteration
evaluates the [P, d] mixed models in one loss call with their owner's data.
Stage II (learning on the fixed graph A^r), t = 0..T-1: one local SGD step
``w_loc,i^{r,t} -> w_loc,i^{r,t+1}``; j sends ``w_loc,j^{r,t+1}`` along every edge alpha_ij > 0;
``w_i <- w_i - eta alpha_ii grad f_i(alpha_ii w_i + sum_j alpha_ij w_loc,j)`` (eq. 4, with the
chain rule of supplement eq. 8);
``wbar_i^{r,t+1} = alpha_ii w_i^{r,t+1} + sum_j alpha_ij w_loc,j^{r,t+1}``.
End of round: ``w_loc,i^{r+1,-1} = argmin f_i`` over ``{w_loc,i^{r,t}, wbar_i^{r,t}}_{t=1..T}``;
this is also the personalised model that is evaluated (Alg. 1's output).

The paper's ambiguities (docs/specifications/diple.md#ambiguities) are options, defaults first:
1. ``self_weight``: ``odds`` (``r_ij = a_ij / (1 - a_ij)`` with a <= 1 - eps,
   ``alpha_ii = 1 / (1 + sum r)``, ``alpha_ij = r_ij / (1 + sum r)``: exact for one neighbour) or
   ``raw`` (``alpha_ii = init_weight``, the row ``[alpha_ii, a_ij]`` normalised).
2. ``search``: ``loss`` (dichotomous search: compare f_i at mid -/+ eps/4, keep the side holding
   the minimiser; loss evaluations only) or ``gradient`` (bisection on the sign of
   ``phi'(a) = <grad f_i((1-a) w_i + a w_j), w_j - w_i>``); both stop when the interval holding the
   minimiser is shorter than eps and return 0 (1) when it still touches 0 (1). f_i is the full
   ``bisection_split`` (default ``val``) or a fixed per-round batch of ``bisection_batch`` samples.
3. ``unit`` of E: ``step`` (the text's "E SGD updates") or ``epoch``; stage II is T single steps.
4. ``candidates`` (whose models a client evaluates): ``all`` (every peer every round: "stage I
   learns a directed graph on all agents", N = 15), ``neighbours`` (Alg. 1 as written: the peers
   with ``a_ij^{r-1} > 0``; an edge set to 0 is never re-evaluated) or ``sample`` (``sample_peers``
   random peers per round, the row learned anew over them, as the paper's N = 100 runs; plus the
   current in-neighbours with ``keep_neighbours``).
5. ``mixture_init``: ``own`` (``w_i^{r,0} = w_loc,i^{r,0}``) or ``carry`` (last round's ``w_i``).
6. ``grad_at``: eq. 4's gradient at the neighbours' ``w_loc,j^{r,t}`` as written (``previous``) or
   at the fresh ``w_loc,j^{r,t+1}`` (``fresh``).
7. ``select_on``: the end-of-round argmin on ``val`` (held out) or on the training split.

Defaults: f_i of eq. 3 and of the selection is the held-out validation split and every peer is
re-evaluated each round; ``{candidates: neighbours, bisection_split: train, select_on: train}`` is
Alg. 1 read literally. With little data per client a local model fits its own training set
better than any mixture, so on the training split every edge decays to 0 and the selection keeps
the local model (DiPLe becomes Local; docs/papers/diple.md has the measurements).

Over the simulated network: every model transfer is a message on a directed link (j pushes to
i, which only needs the link j -> i), requested only along base-topology edges. A stage-I
candidate whose model does not arrive keeps its previous coefficient. In stage II a missing
neighbour model is replaced by the newest copy i holds, up to ``policy.max_staleness`` rounds old
(the network's message store: every exchange carries the senders' local models); rows are
renormalised over the copies that are available.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from algorithms import register
from algorithms.base import Algorithm
from algorithms.diple_graph import GraphLearning
from netsim.errors import ConfigError
from netsim.schema.params import Params, param
from netsim.sim.facade import ExchangeResult

@dataclass(frozen=True)
class DiPLeParams(Params):
    """DiPLe's parameters."""

    epsilon: float = param(0.05, "bisection threshold eps (eq. 3); a < eps/2 is set to 0",
                           lo=0, hi=0.5, lo_open=True)
    stage2_steps: int = param(5, "T: stage-II steps per round", lo=1)
    init_weight: float = param(0.5, "entries of A^0 (coefficient of a never-evaluated peer)",
                               lo=0, hi=1, lo_open=True)
    self_weight: Literal["odds", "raw"] = param(
        "odds", "alpha_ii (ambiguity 1): odds r_ij = a_ij/(1-a_ij), alpha_ii = 1/(1+sum r); raw: "
        "alpha_ii = init_weight, row normalised")
    search: Literal["loss", "gradient"] = param(
        "loss", "bisection test (ambiguity 2): loss (compare f_i at mid -/+ eps/4) or gradient "
        "(sign of phi'(mid))")
    bisection_split: Literal["val", "train"] = param("val", "data of f_i in the bisection (eq. 3)")
    bisection_batch: int | None = param(None, "samples per client for f_i in the bisection, fixed "
                                        "within a round; null = the whole split", lo=1)
    unit: Literal["step", "epoch"] = param("step", "unit of E (ambiguity 3): step or epoch")
    candidates: Literal["all", "neighbours", "sample"] = param(
        "all", "peers evaluated in stage I (ambiguity 4): all, neighbours (a_ij^{r-1} > 0, Alg. 1) "
        "or sample (sample_peers random peers)")
    sample_peers: int = param(20, "m: random candidates per round with candidates: sample (paper N "
                              "= 100: 20)", lo=1)
    keep_neighbours: bool = param(False, "candidates: sample also re-evaluates the current "
                                  "in-neighbours instead of learning the row anew")
    mixture_init: Literal["own", "carry"] = param(
        "own", "w_i at the start of stage II (ambiguity 5): own = w_loc,i^{r,0}; carry = last "
        "round's")
    grad_at: Literal["previous", "fresh"] = param(
        "previous", "neighbour models in eq. 4 (ambiguity 6): previous = w_loc,j^{r,t} as written; "
        "fresh = w_loc,j^{r,t+1}")
    select_on: Literal["val", "train"] = param(
        "val", "f_i of the end-of-round selection (ambiguity 7)")
    mixture_lr: float | None = param(None, "eta of eq. 4; null = train.lr", lo=0, lo_open=True)


@register("diple")
class DiPLe(GraphLearning, Algorithm):
    """DiPLe: bisection-learned directed graph + mixture-minimiser training (Alg. 1)."""

    group = "learned graph"  # the run table's group

    params = DiPLeParams
    hp: DiPLeParams

    def __init__(self, ctx):
        super().__init__(ctx)
        p = self.hp
        self.bank = self.new_bank()                         # w_loc
        self.mixer = self.bank.flat.clone()                 # w_i
        self.eps = p.epsilon
        self.T = p.stage2_steps
        self.reach = self.net.in_edges()            # [dst, src] base-topology in-edges
        self.a = np.where(self.reach, p.init_weight, 0.0)    # pairwise coefficients a_ij
        self.A = self.normalise(self.a)
        n_train = self.data.n["train"].cpu().numpy()
        per_epoch = np.ceil(n_train / self.train.batch_size)
        self.e_steps = self.train.local_steps * (per_epoch if p.unit == "epoch" else 1)
        self.select_data = self.data.full(p.select_on)
        self.lr2 = p.mixture_lr or self.train.lr

    @classmethod
    def check_config(cls, spec: dict, cfg: dict, path: str) -> None:
        m, n, sampled = spec["sample_peers"], cfg["clients"], spec["candidates"] == "sample"
        if sampled and m > n - 1:
            raise ConfigError(f"{path}.sample_peers", m, f"an int in [1, {n - 1}] (clients - 1)")
        if spec["keep_neighbours"] and not sampled:
            raise ConfigError(f"{path}.keep_neighbours", True, "false",
                              "it applies with candidates: sample")
        if spec["search"] == "gradient" and spec["bisection_batch"] is None:
            raise ConfigError(f"{path}.bisection_batch", None, "an int >= 1",
                              "search: gradient differentiates f_i on a fixed batch")
        uses_val = "val" in (spec["bisection_split"], spec["select_on"])
        if uses_val and cfg["data"]["val_fraction"] == 0:
            raise ConfigError("data.val_fraction", 0.0, "a float in (0, 1)",
                              f"{path} evaluates f_i on the validation split")

    # ------------------------------------------------------------------ stages
    def neighbours(self, ex: ExchangeResult) -> tuple[Tensor, Tensor]:
        """A's rows renormalised over the available copies: ``(alpha_ii [N], sum_j alpha_ij
        w_loc,j [N, d])``."""
        w = self.A * ex.available
        np.fill_diagonal(w, 0.0)
        own = np.diag(self.A)
        total = own + w.sum(1)
        self_w = torch.as_tensor(own / total, dtype=self.mixer.dtype, device=self.device)
        return self_w, self.net.store.mix(w / total[:, None], ex.held)

    def share(self, ready: np.ndarray, done: np.ndarray) -> ExchangeResult:
        """Every client that finished sends its local model along its out-edges of A."""
        edges = (self.A > 0) & self.reach
        return self.exchange(edges & done[None, :], self.bank.size_bytes, ready=ready,
                             rows=self.bank.flat)

    def mixture_step(self, done: np.ndarray, self_w: Tensor, nb: Tensor) -> None:
        """eq. 4: ``w_i <- w_i - eta alpha_ii grad f_i(alpha_ii w_i + sum_j alpha_ij w_loc,j)``."""
        idx = self.index(done, self.device)
        if len(idx) == 0:
            return
        x, y = self.data.sample_batch("train", self.train.batch_size, self.gen, idx)
        point = self_w[idx, None] * self.mixer[idx] + nb[idx]
        _, g = self.bank.grad(x, y, clients=idx, flat=point)
        self.mixer[idx] -= self.lr2 * self_w[idx, None] * g

    def round(self, t: int) -> None:
        n = self.n
        alive = self.net.alive()
        ex = self.stage_one(alive)
        if self.hp.mixture_init == "own":
            self.mixer.copy_(self.bank.flat)
        self_w, nb = self.neighbours(ex)
        fresh = self.hp.grad_at == "fresh"
        worked = np.zeros(n, bool)
        locs, bars = [], []
        for _ in range(self.T):
            comp = self.compute_phase(active=self.net.alive(), steps=1 if fresh else 2)
            done = comp.finished
            self.local_sgd(self.bank, 1, clients=self.index(done, self.device))
            if fresh:
                ex = self.share(comp.finish_time, done)
                self_w, nb = self.neighbours(ex)
                done = self.compute_phase(active=done, steps=1).finished
            self.mixture_step(done, self_w, nb)
            if not fresh:
                ex = self.share(comp.finish_time, done)
                self_w, nb = self.neighbours(ex)
            worked |= done
            locs.append(self.bank.flat.clone())
            bars.append(self_w[:, None] * self.mixer + nb)
        self.select(locs + bars, worked)

    def select(self, cands: list[Tensor], worked: np.ndarray) -> None:
        """``w_loc,i <- argmin f_i`` over the round's local and mixture models (end of Alg. 1)."""
        split_n = self.data.n[self.hp.select_on].cpu().numpy()
        steps = self.eval_steps(split_n, np.full(self.n, len(cands)), True)
        self.compute_phase(active=worked, steps=steps)
        x, y, mask = self.select_data
        losses = torch.stack([self.bank.evaluate(x, y, mask, flat=c)[1] for c in cands])
        best = losses.argmin(0)
        idx = self.index(worked, self.device)
        chosen = torch.stack(cands)[best, torch.arange(self.n, device=self.device)]
        self.bank.flat[idx] = chosen[idx]
        self.bank.reset_momentum(self.index(worked & (best.cpu().numpy() != self.T - 1),
                                            self.device))

    def personal_models(self) -> Tensor:
        return self.bank.flat

    def collaboration(self) -> np.ndarray:
        return self.A

"""CoBo: collaborative learning via bilevel optimisation (Hashemi, He, Jaggi, NeurIPS 2024).

Specification: docs/specifications/cobo.md. Outer problem (Model-Training)
``min_X sum_i f_i(x_i) + rho/2 sum_{i<j} w*_ij ||x_i - x_j||^2``; inner problem (Client-Selection),
per pair, ``w*_ij in argmax_{w_ij in [0, 1]} w_ij <grad f_i(z_ij), grad f_j(z_ij)>`` with the
midpoint ``z_ij = (x_i + x_j) / 2``. A round of Alg. 1 over the simulated network:

1. every client i pulls the model of each peer k it gives a positive weight ``w_ik`` and of its
   sampled pair partners (one exchange; a pair is sampled with probability ``p_t``);
2. Client-Selection, eq. (1)/(4): for every sampled pair (i, j) whose two model messages arrived,
   both ends compute the gradient of their own loss at ``z_ij`` on a fresh mini-batch (all pairs
   in one batched call), exchange them, and if *both* gradient messages arrive,
   ``w_ij <- Proj(w_ij + gamma <h_i, h_j>)`` (box [0, 1], symmetric; or the row simplex
   ``Delta_i`` of Remark 1). A pair with a missing message skips its update (never one-sided);
3. Model-Training, eq. (2): ``x_i <- x_i - eta (g_i + rho sum_k w_ik (x_i - x_k))`` with the
   freshest received copy of each ``x_k`` up to the receiver policy's ``max_staleness`` (the
   copies the network's message store holds); a peer without a usable copy drops out of the
   sum for that step. Each round reports the weights actually used and the number of pairs whose
   W was updated (:class:`netsim.sim.facade.RoundReport`; the ``effective/`` arrays).

Over lossy links a pair's update needs every one of its messages in the round: 4 with the paper's
exchange (p^4 on Bernoulli(p) links). ``protocol: relay`` needs 3 (one model, the reply
``[x_j, h_j]``, the inner product back; ``(1 - (1 - p)^2) p^2``) and gives the same W and models
on perfect links (both protocols' messages: ``algorithms/cobo_pairs.py``); ``completion: rate``
divides gamma by the pair's estimated completion rate.

Paper-vs-code differences are options: ``order`` (W-then-X as in Alg. 1, or
the code's X-then-W, which equals Alg. 1 shifted by one model step: round 0 steps with W^0),
``gradient`` (raw, or the code's EMA momentum ``m <- beta m + (1 - beta) g`` of the data gradient
with the penalty outside it), the pair-sampling schedule (``mixed_switch``, ``decay_power``,
``pair_rate``: paper 0.2 % / 1/t / 1/n, code 2 % / 1/sqrt(t) / 2/n), ``pair_batches`` (the LLM
code's bug: both midpoint gradients on client i's data) and ``similarity`` (cosine, not in either);
all of them: docs/specifications/cobo.md#code-differences.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from algorithms import register
from algorithms.base import Algorithm
from algorithms.cobo_pairs import PairProtocol, exchange_pairs, relay_pairs
from algorithms.cobo_weights import pair_probability, project_simplex
from netsim.errors import ConfigError
from netsim.runtime.rows import copy_rows
from netsim.schema.params import Params, param
from netsim.sim.facade import ExchangeResult, RoundReport

#: the pair sampling of ``sampling`` (algorithms/cobo_weights.py)
Sampling = Literal["constant", "time", "mixed", "all"]


@dataclass(frozen=True)
class CoBoParams(Params):
    """CoBo's parameters."""

    rho: float = param(0.05, "penalty weight rho of eq. (2) (code README: 0.05)", lo=0)
    gamma: float = param(0.01, "step size gamma of the W ascent, eq. (1) (code: 0.01)", lo=0)
    domain: Literal["box", "simplex"] = param(
        "box", "box [0, 1] (symmetric W) or the row simplex (Remark 1)")
    w_init: float | None = param(None, "initial off-diagonal weight; null = 1 (box, Alg. 1) or "
                                 "1/(N-1) (simplex, LLM code)", lo=0, hi=1)
    sampling: Sampling = param(
        "constant", "pair sampling: constant O(1/n) (Alg. 1), time O(1/t), mixed, all pairs (Table "
        "1)")
    pair_rate: float = param(1.0, "constant rate c: p = c/n (paper 1, code 2)", lo=0, lo_open=True)
    decay_power: float = param(1.0, "time-dependent p_t = (t+1)^-power (paper 1 = O(1/t), code "
                               "0.5)", lo=0, lo_open=True)
    mixed_switch: float = param(0.002, "mixed: share of rounds at the constant rate (paper 0.2 %, "
                                "code 2 %)", lo=0, hi=1)
    order: Literal["w_then_x", "x_then_w"] = param(
        "w_then_x", "W update then model step (Alg. 1) or the code's x_then_w (round 0 steps with "
        "W^0)")
    gradient: Literal["raw", "ema"] = param(
        "raw", "model-step direction: raw stochastic gradient (eq. 2) or the code's EMA momentum "
        "of it, penalty outside")
    ema_beta: float = param(0.9, "gradient: ema -- m <- beta m + (1 - beta) g", lo=0, hi=1)
    similarity: Literal["inner", "cosine"] = param(
        "inner", "W ascent direction: raw inner product (paper) or cosine (option)")
    pair_batches: Literal["both", "first"] = param(
        "both", "midpoint gradients on each end's own data, or both on client i's (the LLM code's "
        "bug)")
    protocol: PairProtocol = param(
        "exchange", "pair messages: exchange = both models then both midpoint gradients (4 "
        "messages, paper semantics); relay = one model, one reply [x_j, h_j], one inner product "
        "back (3 messages)")
    completion: Literal["none", "rate"] = param(
        "none", "W step over lossy links: none, or rate = gamma divided by the pair's estimated "
        "completion rate (importance weight)")


@register("cobo")
class CoBo(Algorithm):
    """CoBo: pairwise collaboration weights by gradient alignment at the midpoint + penalised SGD."""

    group = "learned graph"  # the run table's group

    params = CoBoParams
    hp: CoBoParams

    def __init__(self, ctx):
        super().__init__(ctx)
        self.bank = self.new_bank()
        n, p = self.n, self.hp
        simplex = p.domain == "simplex"
        w0 = p.w_init if p.w_init is not None else (1.0 / (n - 1) if simplex else 1.0)
        self.W = np.full((n, n), float(w0))
        if simplex:
            np.fill_diagonal(self.W, 0.0)
            self.W = project_simplex(self.W)
        self.ema = torch.zeros_like(self.bank.flat) if p.gradient == "ema" else None
        self.stepped = torch.zeros(n, dtype=torch.bool, device=self.device)   # ema: m set
        self.sampled = np.zeros((n, n))       # completion: rate -- s_ij, pairs sampled (i < j)
        self.completed = np.zeros((n, n))     # c_ij, pairs whose W update completed

    @classmethod
    def check_config(cls, spec: dict, cfg: dict, path: str) -> None:
        n, tr = cfg["clients"], spec["train"]
        if n < 2:
            raise ConfigError("clients", n, "at least 2 for cobo")
        if spec["policy"]["name"] == "async":
            raise ConfigError(f"{path}.policy.name", "async", "wait_all or deadline",
                              "a pair's W update needs both midpoint gradients in the same round")
        if spec["gradient"] == "ema":
            for key in ("momentum", "weight_decay", "clip"):
                if tr[key]:
                    raise ConfigError(f"{path}.train.{key}", tr[key], "0 or null with "
                                      "gradient: ema", "the EMA momentum replaces the SGD options")
        w_max = 1.0 if spec["domain"] == "simplex" else n - 1.0
        if spec["rho"] * tr["lr"] * w_max >= 1.0:
            raise ConfigError(f"{path}.rho", spec["rho"],
                              f"rho * lr * max_i sum_k w_ik < 1, i.e. rho < {1 / (tr['lr'] * w_max):.4g}",
                              "the penalty is a Laplacian step "
                              "(docs/specifications/cobo.md#pitfalls)")

    # ------------------------------------------------------------------ one round (Alg. 1)
    def round(self, t: int) -> RoundReport:
        n = self.n
        pairs = np.zeros((n, n), bool)
        if not (self.hp.order == "x_then_w" and t == 0):
            p_t = pair_probability(t, n, self.ctx.schedule.rounds, self.hp.sampling,
                                   self.hp.pair_rate, self.hp.decay_power,
                                   self.hp.mixed_switch)
            pairs = np.triu(self.rng.random((n, n)) < p_t, k=1)
        want = (self.W > 0) | pairs | pairs.T
        np.fill_diagonal(want, False)
        models = self.exchange(want, self.bank.size_bytes, rows=self.bank.flat)
        self.sampled += pairs
        if self.hp.protocol == "exchange":       # Client-Selection's messages (cobo_pairs.py)
            a, b = exchange_pairs(self, pairs, models, self.bank.size_bytes)
        else:
            a, b, models = relay_pairs(self, pairs, models, self.bank.size_bytes)
        self.commit(a, b, self.net.store.rows(models.payload))
        return RoundReport(effective=self.model_step(models),
                           extras={"pair_updates": np.int64(a.size)})

    def commit(self, a: np.ndarray, b: np.ndarray, x: torch.Tensor) -> None:
        """Apply eq. (1/4) on both ends of the completed pairs ``(a, b)`` of the models ``x``
        sent this round."""
        if a.size:
            self.update_w(a, b, self.midpoint_alignment(a, b, x))

    def midpoint_alignment(self, a: np.ndarray, b: np.ndarray, x: torch.Tensor) -> np.ndarray:
        """``<grad f_a(z_ab; xi_a), grad f_b(z_ab; xi_b)>`` for all pairs in one batched call."""
        ia = torch.as_tensor(a, device=self.device)
        ib = torch.as_tensor(b, device=self.device)
        z = 0.5 * (x[ia] + x[ib])
        owners = torch.cat([ia, ia if self.hp.pair_batches == "first" else ib])
        xb, yb = self.data.sample_batch("train", self.train.batch_size, self.gen, owners)
        _, g = self.bank.grad(xb, yb, owners, flat=torch.cat([z, z]))
        ha, hb = g[: a.size], g[a.size:]
        ip = (ha * hb).sum(1)
        if self.hp.similarity == "cosine":
            ip = ip / (ha.norm(dim=1) * hb.norm(dim=1)).clamp(min=1e-12)
        return ip.double().cpu().numpy()

    def update_w(self, a: np.ndarray, b: np.ndarray, ip: np.ndarray) -> None:
        """Projected ascent ``w_ab <- Proj(w_ab + gamma ip_ab)`` on both ends of each pair.

        ``completion: rate`` divides gamma by the pair's estimated completion rate
        ``q_ab = (c_ab + 1) / (s_ab + 1)`` (c_ab completed of s_ab sampled, this one included;
        the +1 is a prior of one completed try, so q starts at 1): the expected ascent per
        sampled round is then that of lossless links. Both ends know s_ab (sampling) and c_ab
        (completions), so they compute the same step.
        """
        W = self.W
        self.completed[a, b] += 1
        step = self.hp.gamma * ip
        if self.hp.completion == "rate":
            step = step * (self.sampled[a, b] + 1) / (self.completed[a, b] + 1)
        W[a, b] += step
        W[b, a] += step
        if self.hp.domain == "box":
            W[a, b] = np.clip(W[a, b], 0.0, 1.0)
            W[b, a] = W[a, b]
        else:
            rows = np.unique(np.r_[a, b])
            W[rows] = project_simplex(W[rows])

    def model_step(self, models: ExchangeResult) -> np.ndarray:
        """Model-Training, eq. (2): E penalised SGD steps against the received peer copies (the
        store's rows of each copy ``models`` says a receiver holds); returns the weights used,
        ``[N, N]``."""
        eff = np.where(models.available, self.W, 0.0)
        np.fill_diagonal(eff, 0.0)
        w = torch.as_tensor(eff, dtype=self.bank.flat.dtype, device=self.device)
        rho = self.hp.rho
        row = rho * w.sum(1, keepdim=True)
        pull = rho * self.net.store.mix(eff, models.held)
        done = self.compute_phase(active=self.net.alive()).finished
        idx, every = self.index(done, self.device), bool(done.all())
        tr = self.train
        for _ in range(tr.local_steps):
            x, y = self.data.sample_batch("train", tr.batch_size, self.gen, idx)
            pen = (torch.mul(self.bank.flat, row).sub_(pull) if every else   # no gathers
                   row[idx] * self.bank.flat[idx] - pull[idx])
            if self.ema is None:
                self.bank.sgd_step(x, y, tr.sgd, clients=idx,
                                   extra_grad=pen)
            else:
                self.ema_step(x, y, idx, pen)
        return eff

    def ema_step(self, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor,
                 pen: torch.Tensor) -> None:
        """The code's step: ``m <- beta m + (1 - beta) g`` (first m = g), ``x <- x - lr (m + pen)``."""
        _, g = self.bank.grad(x, y, idx, track=True)      # BatchNorm: as a training step would
        beta = self.hp.ema_beta
        m = torch.where(self.stepped[idx, None], beta * self.ema[idx] + (1 - beta) * g, g)
        copy_rows(self.ema, idx, m)
        self.stepped[idx] = True
        copy_rows(self.bank.flat, idx, self.bank.flat[idx] - self.train.lr * (m + pen))

    # ------------------------------------------------------------------ results
    def personal_models(self) -> torch.Tensor:
        return self.bank.flat

    def collaboration(self) -> np.ndarray:
        return self.W.copy()

"""PDBO-MTL: personalised decentralised bilevel optimisation solved by SGP and Hyper-Gradient Push
(Terashita & Hara; docs/specifications/pdbo.md).

Each agent i predicts with a softmax(lambda_i)-weighted mixture of K base learners
(:class:`netsim.models.ensemble.EnsembleModel`). The learners x = (theta_1..theta_K) are the
inner, consensus parameters (problem (1), solved by SGP on the realised directed links); lambda_i
is agent i's personal outer parameter, optimised with Adam against the *sum* of all agents' outer
costs (PDBO, eq. 4a / 6). One round of the schedule is one outer step t_h (v2 code,
docs/specifications/pdbo.md#outer-loop):

1. re-initialise the learners (``reinit``) and replay the same mini-batch order
   (``fixed_batches``);
2. T inner steps (``inner_steps``) in the Nedić–Olshevsky form (App. A.3;
   ``algorithms/pdbo_inner.py``):
   ``z_i <- sum_j p_{j->i} z_j - gamma_t (grad_x f_i(z_i / w_i, lambda_i; xi) + wd x_i)``,
   ``w <- P w``, with gamma_t = train.lr times 0.1 at each of the last ``decay_last`` steps;
   every push goes through the engine and SGP's on-time arrivals feed the edge statistics
   p_bar, delta_bar (:class:`algorithms.hgp.EdgeStats`);
3. the personal models (x_i = z_i / w_i, lambda_i) are evaluated on validation; ``select:
   best_val`` keeps those of the best outer step so far (the paper reports test accuracy at the
   outer step with the best validation accuracy);
4. the hyper-gradient: ``hgp`` runs M Hyper-Gradient Push steps (Alg. 2, one engine exchange of
   u per step), ``local`` takes the local outer gradient d_lambda F_bar only (PDBO-MTL (local),
   M = 0), ``none`` never updates lambda (uniform weights: the SGP and Local baselines, for
   which the inner problem is solved once, in round 0);
5. an Adam step on every lambda_i whose hyper-gradient is finite. The last round skips 4-5: its
   update would never be evaluated.

``links/`` has a row per round that solves the inner problem: its last SGP step's deliveries
(HGP's exchanges are not logged; ``none`` solves only in round 0, the later rounds are idle).

Outer cost (v2 code): ``F_i(x_i, lambda_i) = (NLL of the mixture on i's whole train split +
rho / 2 ||lambda_i||^2) / N``; inner cost f_i = NLL on a mini-batch + train.weight_decay / 2
||x_i||^2 (the paper's inner L2 1e-3). One gradient step per push: ``train.local_steps`` is not
used.
"""
from __future__ import annotations

from functools import partial

import numpy as np
import torch
from torch import Tensor

from algorithms import register
from algorithms.base import Algorithm
from algorithms.pdbo_fields import PDBOMTLLocalParams, PDBOMTLParams
from algorithms.pdbo_inner import InnerSGP
from algorithms.selection import BestValidation
from algorithms.hgp import EdgeStats, expected_push_weights, grad_vjp, hgp_step, hgp_weights
from netsim.data.datasets import dataset_info
from netsim.errors import ConfigError
from netsim.models.ensemble import EnsembleModel
from netsim.runtime import ClientBank
from netsim.runtime.adam import BatchedAdam
from netsim.runtime.pushsum import PushSum
from netsim.runtime.scratch import Scratch

@register("pdbo_mtl")
class PDBOMTL(InnerSGP, Algorithm):
    """PDBO-MTL: ensembles with personal weights, learners by SGP, weights by HGP."""

    group = "learned weights"  # the run table's group

    params = PDBOMTLParams
    hp: PDBOMTLParams

    def __init__(self, ctx):
        super().__init__(ctx)
        self.mode = self.hp.hypergradient
        self.model = EnsembleModel(ctx.model, self.hp.learners)
        self.bank = ClientBank(self.model, self.n, self.device, ctx.streams.torch("init", "cpu"),
                               task=self.data.task, loss_scale=self.data.loss_scale)
        self.dx = self.model.inner_dim
        self.x0 = self.bank.flat[:, : self.dx].clone()
        self.lam = self.bank.flat[:, self.dx:].clone()
        graph = self.push_sum_graph() if self.hp.inner == "sgp" else None
        self.push_sum = PushSum.from_params(self.n, self.hp,
                                            None if graph is None else graph.draining,
                                            mass=self.net.store.mass)
        self.w = self.push_sum.fresh_weights(self.device)
        self.z = self.push_sum.bias(self.x0, self.w)
        self._rows = Scratch()                      # the inner steps' [x | lambda] rows
        self.adam = BatchedAdam(self.lam, self.hp.outer_lr, tuple(self.hp.adam_betas))
        self.current = self.bank.flat.clone()
        self.best = BestValidation(self.current, per_client=False)
        self.val_history: list[float] = []
        self.weights_history: list[np.ndarray] = []
        self.last_mixing = np.eye(self.n)
        self._gen_state = self.gen.get_state()
        self._val = self.data.full("val")
        self._outer_data = self.data.full(self.hp.outer_split)
        floats = self.bank.flat.element_size()
        self.sgp_bytes, self.u_bytes = floats * (self.dx + 1), floats * self.dx

    @classmethod
    def check_config(cls, spec: dict, cfg: dict, path: str) -> None:
        if dataset_info(cfg["data"]["dataset"]).task != "classification":
            raise ConfigError("data.dataset", cfg["data"]["dataset"]["name"],
                              "a classification dataset (PDBO-MTL mixes class probabilities)")
        train = spec["train"]
        if train["momentum"]:
            raise ConfigError(f"{path}.train.momentum", train["momentum"], "0 (HGP differentiates "
                              "the plain SGP step)")
        if train["clip"] is not None:
            raise ConfigError(f"{path}.train.clip", train["clip"], "null (HGP differentiates the "
                              "unclipped SGP step)")
        if len(spec["adam_betas"]) != 2:
            raise ConfigError(f"{path}.adam_betas", spec["adam_betas"], "two floats in [0, 1)")
        for k, last in enumerate(spec["decay_last"]):
            if last > spec["inner_steps"]:
                raise ConfigError(f"{path}.decay_last[{k}]", last,
                                  f"at most inner_steps = {spec['inner_steps']}")
        if spec["hypergradient"] == "hgp" and spec["inner"] != "sgp":
            raise ConfigError(f"{path}.inner", spec["inner"], "sgp with hypergradient: hgp (the "
                              "local SGD map has no cross-agent terms; use hypergradient: local)")

    # ------------------------------------------------------------------ the outer step
    def round(self, t: int) -> None:
        if self.mode == "none" and t > 0:
            return                                  # lambda never moves: nothing left to solve
        if self.hp.fixed_batches:
            self.gen.set_state(self._gen_state)
        if self.hp.reinit or t == 0:
            self.w = self.push_sum.fresh_weights(self.device)
            self.z = self.push_sum.bias(self.x0, self.w)
            self.push_sum.reset()
            self.bank.reset_statistics()            # the code reloads the initial state dict
        stats = self.solve_inner()
        x = self.x()
        self._remember(x)
        if self.mode != "none" and t + 1 < self.ctx.schedule.rounds:
            grad = self.hypergradient(x, stats)
            self.adam.step(grad, torch.isfinite(grad).all(1))
            self.lam = self.adam.param

    # ------------------------------------------------------------------ outer problem
    def _outer_cost(self, x: Tensor, lam: Tensor) -> Tensor:
        """F_bar = sum_i F_i: (mixture NLL on i's outer split + rho / 2 ||lambda_i||^2) / N."""
        xs, ys, mask = self._outer_data
        params = self.bank.params(torch.cat([x, lam], 1))
        logp = (self.model.forward(params, xs, buffers=self.bank.buffers())
                if self.bank.running is not None and self.hp.outer_bn == "eval" else
                self.model.forward(params, xs))
        nll = -logp.gather(-1, ys.unsqueeze(-1)).squeeze(-1)
        per_agent = (nll * mask).sum(1) / mask.sum(1).clamp(min=1) * self.bank.loss_scale
        rho = self.hp.outer_weight_decay
        return (per_agent + 0.5 * rho * lam.pow(2).sum(1)).sum() / self.n

    def edge_statistics(self, stats: EdgeStats | None) -> tuple[np.ndarray, np.ndarray]:
        """``(p_bar, delta_bar)``, receiver-major: estimated during SGP, or from the models."""
        if self.hp.edge_stats == "estimated":
            return stats.p_bar(), stats.delta_bar()
        return (expected_push_weights(self.net.link_probability().T),
                self.net.delivery_probability())

    def hypergradient(self, x: Tensor, stats: EdgeStats | None) -> Tensor:
        """Estimate of d_{lambda_i} F_bar for every agent (Alg. 2; M = 0 for ``local``)."""
        xr, lr = x.detach().requires_grad_(True), self.lam.detach().requires_grad_(True)
        with torch.enable_grad():
            gx, gl = torch.autograd.grad(self._outer_cost(xr, lr), (xr, lr))
        if self.mode == "local":
            return gl
        w = self.w.to(gx.dtype)
        u, v = gx / w, gl
        kappa = self.push_sum.step_scale(w, w.dtype)       # SGP's cap on the local step
        p_bar, delta_bar = self.edge_statistics(stats)
        gamma = self.hp.hgp_lr or self.inner_lr(self.hp.inner_steps)
        for _ in range(self.hp.neumann_steps):
            t0 = self.net.now
            done = self.compute_phase(active=self.net.alive(), steps=1).finished
            ex = self.exchange(self.net.in_edges() & done[None, :], self.u_bytes,
                               ready=np.full(self.n, t0), logged=False)
            c = torch.as_tensor(hgp_weights(p_bar, delta_bar, ex.delivered), dtype=u.dtype,
                                device=self.device)
            hvp, mixed = self.products(x, u)
            u_new, v_new = hgp_step(u, v, c, hvp, mixed, gamma, w, kappa)
            keep = torch.as_tensor(done, device=self.device)[:, None]
            u, v = torch.where(keep, u_new, u), torch.where(keep, v_new, v)
        return v

    def products(self, x: Tensor, u: Tensor) -> tuple[Tensor, Tensor]:
        """``(H u, (d_lambda grad_x f)^T u)`` on one mini-batch (``same_sample``) or two."""
        batch = self.train.batch_size
        xb, yb = self.data.sample_batch("train", batch, self.gen)
        hvp, mixed = grad_vjp(partial(self._inner_loss, xb=xb, yb=yb), x, self.lam, u)
        if not self.hp.same_sample:
            xb, yb = self.data.sample_batch("train", batch, self.gen)
            _, mixed = grad_vjp(partial(self._inner_loss, xb=xb, yb=yb), x, self.lam, u)
        return hvp, mixed

    # ------------------------------------------------------------------ reporting
    def _remember(self, x: Tensor) -> None:
        """Evaluate this outer step on validation; keep the best one (ties: the earliest)."""
        self.current = torch.cat([x, self.lam], 1)
        acc, _ = self.bank.evaluate(*self._val, flat=self.current)
        score = acc.mean()
        self.val_history.append(float(score))
        self.weights_history.append(self.outer_weights())
        self.best.offer(score, self.current)

    def outer_weights(self) -> np.ndarray:
        """softmax(lambda_i) of every agent, ``[N, K]`` (the ensemble weights)."""
        return torch.softmax(self.lam, 1).cpu().numpy()

    def health(self) -> dict[str, Tensor]:
        """The reported models, the inner state (z, w) and the outer weights lambda."""
        return {"model": self.personal_models(), "inner model z": self.z,
                "push-sum weight": self.w, "outer weights lambda": self.lam}

    def personal_models(self) -> Tensor:
        return self.best.models if self.hp.select == "best_val" else self.current

    def collaboration(self) -> np.ndarray:
        """Mean realised SGP mixing matrix of the last inner solve (identity for local)."""
        return self.last_mixing

    def extra_arrays(self) -> dict[str, dict[str, np.ndarray]]:
        """``outer/<label>_seed<k>.npz``: softmax(lambda_i) ``weights`` [S, N, K] and the mean
        validation accuracy ``val_accuracy`` [S] after each outer step."""
        if not self.weights_history:
            return {}
        return {"outer": {"weights": np.stack(self.weights_history),
                          "val_accuracy": np.asarray(self.val_history)}}


@register("pdbo_mtl_local")
class PDBOMTLLocal(PDBOMTL):
    """PDBO-MTL (local): lambda_i follows its own outer gradient only (M = 0, no cooperation)."""

    # PDBO-MTL's parameters without HGP's: the inherited code reads those only in hgp mode
    params = PDBOMTLLocalParams  # type: ignore[assignment]
    hp: PDBOMTLLocalParams  # type: ignore[assignment]

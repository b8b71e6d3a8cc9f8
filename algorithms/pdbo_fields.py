"""PDBO-MTL's parameters (Terashita & Hara, Table 2 and App. A.3;
docs/specifications/pdbo.md#hyper-parameters): those of every variant, then each variant's
hyper-gradient (with Hyper-Gradient Push's parameters for ``pdbo_mtl``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from netsim.runtime.pushsum import PushSumParams
from netsim.schema.params import param


@dataclass(frozen=True)
class PDBOParams(PushSumParams):
    """The parameters of every PDBO-MTL variant: its inner SGP's push-sum options, then these."""

    learners: int = param(3, "K base learners per ensemble (Sec. 5)", lo=1)
    inner: Literal["sgp", "local"] = param(
        "sgp", "inner solver: sgp (push-sum over the realised directed links) or local (local SGD, "
        "no communication)")
    inner_steps: int = param(200, "T inner steps per outer step (Table 2: 600 / 1200)", lo=1)
    decay_last: list[int] = param([100, 50], "inner lr x0.1 at each of the last ... steps (App. "
                                  "A.3: the last 100 and the last 50)", lo=1)
    outer_lr: float = param(1.0, "Adam learning rate of lambda (Table 2: 1.0; v2 code 0.1 for "
                            "EMNIST and CIFAR-10)", lo=0.0)
    outer_weight_decay: float = param(0.01, "rho: L2 of lambda_i in F_i (Table 2)", lo=0.0)
    adam_betas: list[float] = param([0.9, 0.99], "Adam (beta1, beta2): paper (0.9, 0.99); v2 code "
                                    "the torch default (0.9, 0.999)", lo=0.0, hi=0.999999)
    outer_split: Literal["train", "val"] = param(
        "train", "data of the outer cost F_i: train (paper and code) or val")
    reinit: bool = param(True, "re-initialise the learners before every outer step (v2 code); "
                         "false = warm start")
    fixed_batches: bool = param(True, "replay the same mini-batch sequence in every outer step (v2 "
                                "code: fixed seed)")
    outer_bn: Literal["eval", "train"] = param(
        "eval", "BatchNorm in the outer cost F_i: eval = the running statistics (the v2 code puts "
        "the model in eval mode for the outer gradient; "
        "docs/specifications/pdbo.md#code-differences) or train = batch statistics; models without "
        "BatchNorm ignore it")
    select: Literal["best_val", "last"] = param(
        "best_val", "reported personal models: the outer step with the best mean validation "
        "accuracy so far (paper), or the last")


@dataclass(frozen=True)
class PDBOMTLParams(PDBOParams):
    """PDBO-MTL's: the hyper-gradient and Hyper-Gradient Push's parameters."""

    hypergradient: Literal["hgp", "local", "none"] = param(
        "hgp", "hgp (Alg. 2), local (d_lambda F_bar only = PDBO-MTL (local)) or none (uniform "
        "weights: the SGP / Local baselines)")
    neumann_steps: int = param(20, "M, HGP steps per outer step (Table 2: 200 for EMNIST, 20 "
                               "otherwise)", lo=0)
    hgp_lr: float | None = param(None, "gamma of the SGP map differentiated by HGP; null = the "
                                 "last inner step's (decayed) learning rate, as the v2 code",
                                 lo=0.0, lo_open=True)
    same_sample: bool = param(True, "one mini-batch for both Jacobians per HGP step (App. A.3, the "
                              "authors' runs); false = independent batches (Alg. 2)")
    edge_stats: Literal["estimated", "known"] = param(
        "estimated", "p_bar and delta_bar: estimated from SGP's on-time arrivals (v2 code), or "
        "known from the link and loss models")


@dataclass(frozen=True)
class PDBOMTLLocalParams(PDBOParams):
    """PDBO-MTL (local)'s: the local hyper-gradient only (no HGP)."""

    hypergradient: Literal["local"] = param("local", "local: d_lambda F_bar only (M = 0)")

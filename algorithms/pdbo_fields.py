"""PDBO-MTL's parameters (Terashita & Hara, Table 2 and App. A.3;
docs/specifications/pdbo.md#hyper-parameters): those of every variant and those of Hyper-Gradient
Push."""
from __future__ import annotations

from netsim.runtime.pushsum import PUSH_SUM_FIELDS
from netsim.schema import Field

HGP_FIELDS = {
    "neumann_steps": Field("int", 20, "M, HGP steps per outer step (Table 2: 200 for EMNIST, "
                           "20 otherwise)", lo=0),
    "hgp_lr": Field("float", None, "gamma of the SGP map differentiated by HGP; null = the last "
                    "inner step's (decayed) learning rate, as the v2 code", lo=0.0, lo_open=True,
                    nullable=True),
    "same_sample": Field("bool", True, "one mini-batch for both Jacobians per HGP step (App. "
                         "A.3, the authors' runs); false = independent batches (Alg. 2)"),
    "edge_stats": Field("str", "estimated", "p_bar and delta_bar: estimated from SGP's on-time "
                        "arrivals (v2 code), or known from the link and loss models",
                        choices=("estimated", "known")),
}

COMMON_FIELDS = {
    "learners": Field("int", 3, "K base learners per ensemble (Sec. 5)", lo=1),
    "inner": Field("str", "sgp", "inner solver: sgp (push-sum over the realised directed links) "
                   "or local (local SGD, no communication)", choices=("sgp", "local")),
    **PUSH_SUM_FIELDS,
    "inner_steps": Field("int", 200, "T inner steps per outer step (Table 2: 600 / 1200)", lo=1),
    "decay_last": Field("list", [100, 50], "inner lr x0.1 at each of the last ... steps "
                        "(App. A.3: the last 100 and the last 50)", item="int", lo=1),
    "outer_lr": Field("float", 1.0, "Adam learning rate of lambda (Table 2: 1.0; v2 code 0.1 for "
                      "EMNIST and CIFAR-10)", lo=0.0),
    "outer_weight_decay": Field("float", 0.01, "rho: L2 of lambda_i in F_i (Table 2)", lo=0.0),
    "adam_betas": Field("list", [0.9, 0.99], "Adam (beta1, beta2): paper (0.9, 0.99); v2 code "
                        "the torch default (0.9, 0.999)", item="float", lo=0.0, hi=0.999999),
    "outer_split": Field("str", "train", "data of the outer cost F_i: train (paper and code) or "
                         "val", choices=("train", "val")),
    "reinit": Field("bool", True, "re-initialise the learners before every outer step (v2 code); "
                    "false = warm start"),
    "fixed_batches": Field("bool", True, "replay the same mini-batch sequence in every outer step "
                           "(v2 code: fixed seed)"),
    "outer_bn": Field("str", "eval", "BatchNorm in the outer cost F_i: eval = the running "
                      "statistics (the v2 code puts the model in eval mode for the outer "
                      "gradient; docs/specifications/pdbo.md#code-differences) or train = "
                      "batch statistics; models without BatchNorm ignore it",
                      choices=("eval", "train")),
    "select": Field("str", "best_val", "reported personal models: the outer step with the best "
                    "mean validation accuracy so far (paper), or the last",
                    choices=("best_val", "last")),
}

"""Data splits of the papers that the generic partitions do not express (registered into
``PARTITIONS`` on import).

``pachinko``: the two-stage Pachinko allocation of CIFAR-100 (Reddi et al. 2021, "Adaptive
Federated Optimization", App. C.1; used by FedEM and PDBO, Terashita & Hara Sec. 6).

The other splits of the papers are options of the generic partitions:
DPFL Dir(0.1) = ``dirichlet {alpha: 0.1, min_size: 20}``; DPFL Patho(3) = ``pathological
{classes_per_client: 3, dirichlet_within: 0.5, assignment: random}``; DiPLe's 2 classes per client = ``pathological
{classes_per_client: 2}``; CoBo cross-device = ``class_clusters {clusters: 10, sizes: [6, 6, 7, 7,
8, 8, 9, 9, 10, 10], local_labels: true}`` on CIFAR-100; CoBo cross-silo = ``label_permutation
{clusters: 4, replicate: true, shift: true, shift_step: 11}``.
"""
from __future__ import annotations

import numpy as np

from netsim.data.datasets import RawDataset
from netsim.data.partitions import PARTITIONS, Partition
from netsim.errors import ConfigError
from netsim.schema import Field


def _draws_without_replacement(n: int, p: np.ndarray, left: np.ndarray,
                               rng: np.random.Generator) -> np.ndarray:
    """Counts of ``n`` sequential draws from the categorical ``p`` where outcome j has ``left[j]``
    items: once an outcome is exhausted its probability is removed and ``p`` renormalised.

    Drawn in rounds of multinomials, which is exact: the draws of a round that land on an outcome
    beyond its supply are redrawn in the next round from ``p`` renormalised over the outcomes left.
    If all the remaining mass underflowed to zero, the outcomes left are equally likely.
    """
    counts = np.zeros(len(p), np.int64)
    while n:
        open_ = counts < left
        w = np.where(open_, p, 0.0)
        w = w / w.sum() if w.sum() > 0 else open_ / open_.sum()
        take = np.minimum(rng.multinomial(n, w), left - counts)
        counts += take
        n -= int(take.sum())
    return counts


@PARTITIONS.register("pachinko", {
    "alpha": Field("float", 0.4, "Dir(alpha) over the coarse labels, per client (FedEM / PDBO: "
                   "0.4; Reddi et al.: 0.1)", lo=0.0, lo_open=True),
    "beta": Field("float", 10.0, "Dir(beta) over a coarse label's fine labels, per client and "
                  "coarse label", lo=0.0, lo_open=True),
    "samples_per_client": Field("int", None, "samples drawn by each client; null = "
                                "len(data) // N", lo=1, nullable=True),
})
def pachinko(ds: RawDataset, n_clients: int, rng: np.random.Generator, alpha: float, beta: float,
             samples_per_client: int | None) -> Partition:
    """Two-stage Pachinko allocation (Reddi et al. 2021, App. C.1; FedEM's and PDBO's CIFAR-100).

    Client i draws theta_i ~ Dir(alpha 1) over the coarse labels and, for every coarse label c,
    phi_ic ~ Dir(beta 1) over c's fine labels; each of its n samples is a coarse label ~ theta_i,
    then a fine label ~ phi_ic, then a sample of that fine label, without replacement. A fine label
    that runs out is removed from phi_ic (renormalised), a coarse label whose fine labels all ran
    out from theta_i. Clients draw one after the other from the shared pool;
    n = ``samples_per_client`` (default len(data) // N; PDBO: 3000 = 900 train + 300 val + 1800
    test, N = 20). Needs the dataset's ``meta["coarse"]`` (cifar100).
    """
    if "coarse" not in ds.meta:
        raise ConfigError("name", "pachinko", f"a partition of a dataset with coarse labels "
                          f"(meta['coarse']): cifar100 (dataset {ds.name!r} has none)")
    n = len(ds) // n_clients if samples_per_client is None else samples_per_client
    if n * n_clients > len(ds) or n == 0:
        raise ConfigError("samples_per_client", samples_per_client,
                          f"an int in [1, {len(ds) // n_clients}] ({len(ds)} samples over "
                          f"{n_clients} clients)")
    # pools of (coarse, fine) label pairs, each in shuffled order; ``coarse_of[j]``: pool j's coarse
    pair = np.asarray(ds.meta["coarse"], np.int64) * ds.num_classes + ds.y
    keys, pool_of = np.unique(pair, return_inverse=True)
    order = rng.permutation(len(ds))
    order = order[np.argsort(pool_of[order], kind="stable")]
    size = np.bincount(pool_of, minlength=len(keys))
    start = np.cumsum(size) - size
    _, coarse_of = np.unique(keys // ds.num_classes, return_inverse=True)
    fines = [np.flatnonzero(coarse_of == c) for c in range(coarse_of.max() + 1)]
    used = np.zeros(len(keys), np.int64)
    indices = []
    for _ in range(n_clients):
        theta = rng.dirichlet(np.full(len(fines), alpha))
        phi = [rng.dirichlet(np.full(len(f), beta)) for f in fines]
        left = size - used
        per_coarse = _draws_without_replacement(
            n, theta, np.bincount(coarse_of, weights=left).astype(np.int64), rng)
        taken = np.zeros(len(keys), np.int64)
        for c in np.flatnonzero(per_coarse):
            taken[fines[c]] = _draws_without_replacement(per_coarse[c], phi[c], left[fines[c]], rng)
        first = start + used
        indices.append(np.concatenate([order[a:a + k] for a, k in zip(first, taken) if k]))
        used += taken
    return Partition(indices)

"""Partitions for the DiPLe experiments (registered into ``PARTITIONS`` on import).

``group_classes``: K groups of clients; group k holds ``classes_per_group`` randomly chosen classes
and splits their samples IID among its members, optionally in unequal ``shares``. This is the
setting of DiPLe's Table II (4 agents in two groups, IID within a group, 2 classes each, the groups
non-IID), with ground-truth clusters = groups so that ``oracle`` runs the paper's "undirected"
within-group baseline; with one group of all classes and unequal ``shares`` it is the
asymmetric-data case (one client holding much more data than another).
"""
from __future__ import annotations

import numpy as np

from netsim.data.datasets import RawDataset
from netsim.data.partitions import (PARTITIONS, Partition, _CLUSTERS, _SIZES, _cluster_ids,
                                    _split_by)
from netsim.errors import ConfigError
from netsim.schema import Field


@PARTITIONS.register("group_classes", {
    "clusters": _CLUSTERS,
    "sizes": _SIZES,
    "classes_per_group": Field("int", 2, "classes held by each group", lo=1),
    "disjoint": Field("bool", True, "groups draw their classes without overlap; false = each "
                      "group draws independently (classes may coincide)"),
    "shares": Field("list", None, "relative amount of its group's data each client gets (N "
                    "positive numbers); null = equal", item="float", lo=0, nullable=True),
})
def group_classes(ds: RawDataset, n_clients: int, rng: np.random.Generator, clusters: int,
                  sizes: list[int] | None, classes_per_group: int, disjoint: bool,
                  shares: list[float] | None) -> Partition:
    """K groups of clients, each holding ``classes_per_group`` random classes, IID within a group.

    Group k's classes are drawn at random (disjoint across groups unless ``disjoint: false``); all
    samples of those classes (split evenly among the groups sharing a class) are dealt to the
    group's members in proportion to their ``shares``. Ground-truth cluster = group.
    """
    c, k = ds.num_classes, classes_per_group
    if k > c or (disjoint and k * clusters > c):
        raise ConfigError("classes_per_group", k,
                          f"an int in [1, {c // clusters if disjoint else c}] ({c} classes"
                          f"{f' over {clusters} disjoint groups' if disjoint else ''})")
    if shares is not None and (len(shares) != n_clients or min(shares) <= 0):
        raise ConfigError("shares", shares, f"{n_clients} positive numbers (one per client)")
    cluster = _cluster_ids(n_clients, clusters, sizes)
    if disjoint:
        held = rng.permutation(c)[: k * clusters].reshape(clusters, k)
    else:
        held = np.stack([rng.choice(c, k, replace=False) for _ in range(clusters)])
    share = np.ones(n_clients) if shares is None else np.asarray(shares, float)
    pools: list[list[np.ndarray]] = [[] for _ in range(clusters)]
    for cls in range(c):
        owners = np.flatnonzero((held == cls).any(axis=1))
        if len(owners) == 0:
            continue
        idx = rng.permutation(np.flatnonzero(ds.y == cls))
        for g, piece in zip(owners, np.array_split(idx, len(owners))):
            pools[g].append(piece)
    indices: list[np.ndarray] = [np.empty(0, np.int64)] * n_clients
    for g in range(clusters):
        members = np.flatnonzero(cluster == g)
        pool = rng.permutation(np.concatenate(pools[g]))
        props = share[members] / share[members].sum()
        for i, part in zip(members, _split_by(pool, props, floor=1)):
            indices[i] = part
    return Partition(indices, cluster, [f"classes {sorted(held[g].tolist())}" for g in cluster])

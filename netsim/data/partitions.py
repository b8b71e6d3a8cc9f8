"""Partitions: which samples each client holds, its ground-truth cluster and its data transforms.

Each partition is registered in ``PARTITIONS`` as ``fn(ds, n_clients, rng, **params) -> Partition``.
Call them through :func:`make_partition`, which checks the spec against the dataset first
(:func:`check_partition`, also used by ``validate_data`` before any data is loaded). Inside a
partition function ConfigError fields are relative to its own spec (``min_size``);
:func:`make_partition` prefixes them with the spec's path (``data.partition.min_size``), except
``clients``, the scenario's own field (e.g. more clients than LEAF writers).

All partitions are disjoint across clients except ``label_permutation`` with ``replicate: true``
(each cluster splits the whole dataset among its members, as in CoBo's cross-silo code).
Clusters are contiguous blocks of clients: equal sizes (the first ones one larger when N is not a
multiple of K) or the given ``sizes``.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import factorial

import numpy as np

from netsim.data.datasets import DatasetInfo, RawDataset, draw_range
from netsim.errors import ConfigError
from netsim.schema import Field
from netsim.schema.registry import Registry

PARTITIONS = Registry("partition")

MAX_DIRICHLET_TRIES = 100


@dataclass
class Partition:
    """Per-client sample indices into the dataset plus ground truth and transforms.

    ``cluster``: int[N] ground-truth cluster (-1 if none); ``group``: a name per client ("" if none);
    ``label_map``: int[N, C] per-client label map (client i sees ``label_map[i, y]``), None = identity;
    ``feature_shift``: float[N, 2] per-client ``(scale, shift)``, client i sees ``x * scale + shift``,
    None = identity.
    """

    indices: list[np.ndarray]
    cluster: np.ndarray | None = None
    group: list[str] | None = None
    label_map: np.ndarray | None = None
    feature_shift: np.ndarray | None = None

    def __post_init__(self):
        n = len(self.indices)
        self.cluster = np.full(n, -1) if self.cluster is None else np.asarray(self.cluster)
        self.group = [""] * n if self.group is None else list(self.group)


# --- shared helpers ---------------------------------------------------------------------------

def _iid(idx: np.ndarray, parts: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Shuffle ``idx`` and cut it into ``parts`` near-equal pieces."""
    return np.array_split(rng.permutation(idx), parts)


def _split_by(idx: np.ndarray, props: np.ndarray, floor: int = 0) -> list[np.ndarray]:
    """Cut ``idx`` into ``len(props)`` consecutive pieces proportional to ``props``.

    Every piece gets at least ``floor`` items when there are enough items for all.
    """
    h = len(props)
    floor = floor if len(idx) >= floor * h else 0
    cuts = floor * np.arange(1, h) + np.rint(np.cumsum(props)[:-1] * (len(idx) - floor * h))
    return np.split(idx, cuts.astype(np.int64))


def _cluster_ids(n: int, k: int, sizes: list[int] | None) -> np.ndarray:
    """Contiguous blocks of clients: cluster of each client."""
    if sizes is None:
        sizes = [len(b) for b in np.array_split(np.arange(n), k)]
    return np.repeat(np.arange(k), sizes)


def _within_clusters(pools: list[np.ndarray], cluster: np.ndarray,
                     rng: np.random.Generator) -> list[np.ndarray]:
    """Split cluster k's sample pool ``pools[k]`` IID among the clients of cluster k."""
    indices: list[np.ndarray] = [np.empty(0, np.int64)] * len(cluster)
    for k, pool in enumerate(pools):
        members = np.flatnonzero(cluster == k)
        for i, part in zip(members, _iid(pool, len(members), rng)):
            indices[i] = part
    return indices


def _distinct_permutations(c: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` distinct permutations of ``range(c)`` [k, c], the first one the identity."""
    perms = [np.arange(c)]
    while len(perms) < k:
        p = rng.permutation(c)
        if not any(np.array_equal(p, q) for q in perms):
            perms.append(p)
    return np.stack(perms)


def _dirichlet_indices(y: np.ndarray, n: int, alpha: float, min_size: int,
                       rng: np.random.Generator) -> list[np.ndarray]:
    """Per-class Dirichlet split (Hsu et al. 2019; Yurochkin et al. 2019, as in NIID-Bench / DPFL).

    For each class, proportions p ~ Dir(alpha 1) over the clients still holding less than an N-th
    of the data (the renormalised, masked Dir(alpha 1_N) of NIID-Bench, drawn directly so that no
    mass is lost); redrawn until every client holds at least ``min_size`` samples.
    """
    if n * min_size > len(y):
        raise ConfigError("min_size", min_size,
                          f"an int <= {len(y) // n} ({len(y)} samples over {n} clients)")
    classes = np.unique(y)
    for _ in range(MAX_DIRICHLET_TRIES):
        parts: list[list[np.ndarray]] = [[] for _ in range(n)]
        sizes = np.zeros(n, np.int64)
        for c in classes:
            idx = rng.permutation(np.flatnonzero(y == c))
            open_ = sizes < len(y) / n
            p = np.zeros(n)
            p[open_] = rng.dirichlet(np.full(open_.sum(), alpha))
            for i, piece in enumerate(_split_by(idx, p)):
                parts[i].append(piece)
                sizes[i] += len(piece)
        if sizes.min() >= min_size:
            return [np.concatenate(p) for p in parts]
    raise ConfigError("min_size", min_size,
                      f"a minimum client size reached by a Dir({alpha}) draw within "
                      f"{MAX_DIRICHLET_TRIES} attempts; raise alpha, lower min_size or use fewer "
                      f"clients ({len(y)} samples, {n} clients)")


# --- fields shared by several partitions --------------------------------------------------------

_CLUSTERS = Field("int", 2, "number of ground-truth clusters K", lo=1)
_SIZES = Field("list", None, "clients per cluster (K ints summing to N); null = equal blocks",
               item="int", lo=1, nullable=True)
_ALPHA = Field("float", 0.5, "Dirichlet concentration (small = skewed)", lo=0.0, lo_open=True)
_MIN_SIZE = Field("int", 10, "redraw until every client holds at least this many samples", lo=0)


# --- partitions -------------------------------------------------------------------------------

@PARTITIONS.register("iid")
def iid(ds: RawDataset, n_clients: int, rng: np.random.Generator) -> Partition:
    """Shuffle and deal the samples into N near-equal IID shares."""
    return Partition(_iid(np.arange(len(ds)), n_clients, rng))


@PARTITIONS.register("dirichlet", {"alpha": _ALPHA, "min_size": _MIN_SIZE})
def dirichlet(ds: RawDataset, n_clients: int, rng: np.random.Generator, alpha: float,
              min_size: int) -> Partition:
    """Label skew: per-class Dirichlet(alpha) proportions over clients (Hsu et al. 2019)."""
    return Partition(_dirichlet_indices(ds.y, n_clients, alpha, min_size, rng))


@PARTITIONS.register("pathological", {
    "classes_per_client": Field("int", 2, "classes held by each client", lo=1),
    "dirichlet_within": Field("float", None, "Dir(alpha) shares of a class among its holders "
                              "(DPFL); null = equal shares", lo=0.0, lo_open=True, nullable=True),
    "assignment": Field("str", "spread", "which classes a client holds: spread evenly over a "
                        "random class order, or k random classes per client independently "
                        "(DPFL's code; a class may have no holder)", choices=("spread", "random")),
})
def pathological(ds: RawDataset, n_clients: int, rng: np.random.Generator,
                 classes_per_client: int, dirichlet_within: float | None,
                 assignment: str) -> Partition:
    """Pathological non-IID (McMahan et al. 2017): each client holds exactly k classes.

    ``spread``: client i holds classes ``order[(i k + j) mod C]``, j < k, for a random class
    order, so classes are spread evenly; ``random``: each client draws k distinct classes
    uniformly (DPFL's ``missing_classes``). A class's samples are split among its holders,
    equally or by Dir(``dirichlet_within``) shares (DPFL's Patho split), each holder getting at
    least one sample.
    """
    c, k = ds.num_classes, classes_per_client
    if assignment == "spread":
        held = rng.permutation(c)[(np.arange(n_clients)[:, None] * k + np.arange(k)) % c]
    else:
        held = np.argsort(rng.random((n_clients, c)), axis=1)[:, :k]
    parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
    for cls in range(c):
        holders = np.flatnonzero((held == cls).any(axis=1))
        if len(holders) == 0:
            continue
        props = (np.full(len(holders), 1 / len(holders)) if dirichlet_within is None
                 else rng.dirichlet(np.full(len(holders), dirichlet_within)))
        idx = rng.permutation(np.flatnonzero(ds.y == cls))
        for i, piece in zip(holders, _split_by(idx, props, floor=1)):
            parts[i].append(piece)
    return Partition([np.concatenate(p) if p else np.empty(0, np.int64) for p in parts])


@PARTITIONS.register("clusters", {"clusters": _CLUSTERS, "sizes": _SIZES})
def clusters(ds: RawDataset, n_clients: int, rng: np.random.Generator, clusters: int,
             sizes: list[int] | None) -> Partition:
    """IID samples; clients in K ground-truth clusters.

    Meant for the cluster-structured synthetic datasets, whose targets are then drawn per cluster
    (``clustered_linear_regression``, ``cobo_quadratic``); for other datasets the clusters are
    labels only.
    """
    return Partition(_iid(np.arange(len(ds)), n_clients, rng), _cluster_ids(n_clients, clusters, sizes))


@PARTITIONS.register("label_permutation", {
    "clusters": _CLUSTERS, "sizes": _SIZES,
    "replicate": Field("bool", False, "each cluster splits the whole dataset among its clients "
                       "(CoBo's code); false = the data is split among all clients"),
    "shift": Field("bool", False, "cluster g maps label y to (y + shift_step g) mod C, so every "
                   "class has a different label in every cluster (CoBo's code); false = random "
                   "distinct permutations"),
    "shift_step": Field("int", 1, "with shift: cluster g maps y to (y + shift_step g) mod C "
                        "(CoBo's code on CIFAR-100: 11)", lo=1),
})
def label_permutation(ds: RawDataset, n_clients: int, rng: np.random.Generator, clusters: int,
                      sizes: list[int] | None, replicate: bool, shift: bool,
                      shift_step: int) -> Partition:
    """CoBo cross-silo (Hashemi et al. 2024, Sec. 4.1): IID data, one label permutation per cluster.

    Cluster 0 keeps the identity; the K permutations are distinct: random, or with ``shift`` the
    cyclic shifts y -> (y + s g) mod C, s = ``shift_step`` (the code's ``(y + 11 g) mod 100`` for
    CIFAR-100: s = 11).
    """
    c = ds.num_classes
    if shift and len({shift_step * g % c for g in range(clusters)}) < clusters:
        raise ConfigError("shift_step", shift_step, f"a step s whose multiples s g, "
                          f"g < {clusters}, are distinct mod {c} (one cyclic shift per cluster)")
    cluster = _cluster_ids(n_clients, clusters, sizes)
    everything = np.arange(len(ds))
    indices = (_within_clusters([everything] * clusters, cluster, rng) if replicate
               else _iid(everything, n_clients, rng))
    perms = ((np.arange(c)[None, :] + shift_step * np.arange(clusters)[:, None]) % c if shift
             else _distinct_permutations(c, clusters, rng))
    return Partition(indices, cluster, label_map=perms[cluster])


@PARTITIONS.register("class_clusters", {
    "clusters": _CLUSTERS, "sizes": _SIZES,
    "local_labels": Field("bool", False, "renumber labels within the cluster's classes "
                          "(CoBo's code maps y to y mod 10)"),
})
def class_clusters(ds: RawDataset, n_clients: int, rng: np.random.Generator, clusters: int,
                   sizes: list[int] | None, local_labels: bool) -> Partition:
    """CoBo cross-device (Sec. 4.2): cluster k owns the k-th of K contiguous, disjoint class blocks.

    A cluster's samples (those of its classes) are split IID among its clients. With
    ``local_labels`` a label becomes its rank inside the block (all clusters share outputs 0..C/K-1).
    """
    block = np.repeat(np.arange(clusters),
                      [len(b) for b in np.array_split(np.arange(ds.num_classes), clusters)])
    cluster = _cluster_ids(n_clients, clusters, sizes)
    indices = _within_clusters([np.flatnonzero(block[ds.y] == k) for k in range(clusters)],
                               cluster, rng)
    label_map = None
    if local_labels:
        rank = np.arange(ds.num_classes) - np.searchsorted(block, block)
        label_map = np.tile(rank, (n_clients, 1))
    return Partition(indices, cluster, label_map=label_map)


@PARTITIONS.register("feature_shift", {
    "clusters": _CLUSTERS, "sizes": _SIZES,
    "dirichlet": Field("float", 0.4, "Dir(alpha) label split over clients; null = IID",
                       lo=0.0, lo_open=True, nullable=True),
    "min_size": _MIN_SIZE,
    "scale": Field("range", [0.5, 2.0], "scale_k: a number or [lo, hi] drawn per cluster"),
    "shift": Field("range", [-0.5, 0.5], "shift_k: a number or [lo, hi] drawn per cluster"),
})
def feature_shift(ds: RawDataset, n_clients: int, rng: np.random.Generator, clusters: int,
                  sizes: list[int] | None, dirichlet: float | None, min_size: int,
                  scale: float | list[float], shift: float | list[float]) -> Partition:
    """PDBO's EMNIST setting (per-cluster input normalisation): client i of cluster k sees
    x' = x * scale_k + shift_k, with (scale_k, shift_k) drawn once per cluster, cluster 0 the identity;
    labels split by Dirichlet(``dirichlet``) over all clients (or IID)."""
    cluster = _cluster_ids(n_clients, clusters, sizes)
    indices = (_iid(np.arange(len(ds)), n_clients, rng) if dirichlet is None
               else _dirichlet_indices(ds.y, n_clients, dirichlet, min_size, rng))
    per_cluster = np.stack([draw_range(scale, clusters, rng), draw_range(shift, clusters, rng)], 1)
    per_cluster[0] = (1.0, 0.0)
    return Partition(indices, cluster, feature_shift=per_cluster[cluster])


@PARTITIONS.register("label_flip", {
    "share": Field("float", 0.4, "share of malicious clients", lo=0.0, hi=1.0),
    "base": Field("any", "iid", "the partition the flip is applied to (a partition spec)"),
})
def label_flip(ds: RawDataset, n_clients: int, rng: np.random.Generator, share: float,
               base: dict | str) -> Partition:
    """DPFL (Sec. 4.5) label-flip study: round(share N) random clients ("malicious", cluster 1)
    apply one common random non-identity label permutation on top of the base partition; the
    others are "benign" (cluster 0)."""
    part = make_partition(base, ds, n_clients, rng, path="base")
    bad = np.zeros(n_clients, bool)
    bad[rng.choice(n_clients, int(np.floor(share * n_clients + 0.5)), replace=False)] = True
    flip = _distinct_permutations(ds.num_classes, 2, rng)[1]
    label_map = (np.tile(np.arange(ds.num_classes), (n_clients, 1)) if part.label_map is None
                 else part.label_map)
    label_map = np.where(bad[:, None], flip[label_map], label_map)
    group = ["malicious" if b else "benign" for b in bad]
    return Partition(part.indices, bad.astype(np.int64), group, label_map, part.feature_shift)


# --- checks and entry point -------------------------------------------------------------------

def _uses_labels(spec: dict) -> bool:
    if spec["name"] == "feature_shift":
        return spec["dirichlet"] is not None
    return spec["name"] in ("dirichlet", "pathological", "label_permutation", "class_clusters",
                            "label_flip")


def check_partition(spec: dict, n_clients: int, info: DatasetInfo,
                    path: str = "data.partition") -> dict:
    """Combination checks of a resolved partition spec against N and the dataset (no data loaded).

    Returns the spec with a nested ``base`` (``label_flip``) resolved.
    """
    name, c = spec["name"], info.num_classes
    if info.task != "classification" and _uses_labels(spec):
        raise ConfigError(f"{path}.name", name, "for a regression dataset: iid, clusters, "
                          "feature_shift with dirichlet: null")
    if "clusters" in spec:
        k = spec["clusters"]
        if k > n_clients:
            raise ConfigError(f"{path}.clusters", k,
                              f"an int in [1, {n_clients}] (at most one cluster per client)")
        sizes = spec["sizes"]
        if sizes is not None and (len(sizes) != k or sum(sizes) != n_clients):
            raise ConfigError(f"{path}.sizes", sizes,
                              f"{k} positive ints (one per cluster) summing to {n_clients} clients")
        if name == "class_clusters" and k > c:
            raise ConfigError(f"{path}.clusters", k, f"an int in [1, {c}] (disjoint class blocks "
                              f"of {c} classes)")
        if name == "label_permutation" and spec["shift"] and k > c:
            raise ConfigError(f"{path}.clusters", k,
                              f"an int in [1, {c}] with shift: true ({c} distinct cyclic shifts)")
        if name == "label_permutation" and k > factorial(c):
            raise ConfigError(f"{path}.clusters", k,
                              f"at most {factorial(c)} distinct permutations of {c} classes")
    if name == "pathological" and spec["classes_per_client"] > c:
        raise ConfigError(f"{path}.classes_per_client", spec["classes_per_client"],
                          f"an int in [1, {c}] (the dataset's number of classes)")
    if name == "label_flip":
        base = PARTITIONS.resolve(spec["base"], f"{path}.base")
        if base["name"] == "label_flip":
            raise ConfigError(f"{path}.base.name", "label_flip", "a partition other than label_flip")
        spec = {**spec, "base": check_partition(base, n_clients, info, f"{path}.base")}
    return spec


def make_partition(spec: dict | str, ds: RawDataset, n_clients: int, rng: np.random.Generator,
                   path: str = "data.partition") -> Partition:
    """Resolve and check ``spec`` for ``ds``, then partition ``ds`` among ``n_clients`` clients."""
    spec = check_partition(PARTITIONS.resolve(spec, path), n_clients,
                           DatasetInfo(ds.task, ds.num_classes), path)
    fn = PARTITIONS.get(spec["name"], f"{path}.name").obj
    try:
        return fn(ds, n_clients, rng, **{k: v for k, v in spec.items() if k != "name"})
    except ConfigError as e:          # fields are the spec's own, except the scenario's clients
        field = e.field if e.field == "clients" else f"{path}.{e.field}"
        raise ConfigError(field, e.value, e.allowed) from None

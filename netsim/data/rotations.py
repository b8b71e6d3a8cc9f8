"""Rotated-image tasks: tasks related to different degrees (the analogue of CoBo's Figure 4).

A partition only selects samples and applies label maps / affine feature shifts, so a rotation is
built into the data: the ``rotated`` dataset holds every image of a bundled base dataset (digits
or MNIST) once per angle, each sample tagged with its angle, and the ``rotations`` partition gives
the clients of cluster k the images rotated by ``angles[k]``. The base images are dealt IID and
disjointly over all clients, so clients differ only by their rotation (0 vs 15 degrees: nearly
the same task; 0 vs 180: a different one).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netsim.data.datasets import DatasetInfo, RawDataset, dataset, generated_size, load_dataset
from netsim.data.partitions import PARTITIONS, Partition, _SIZES, _cluster_ids, _iid
from netsim.errors import ConfigError
from netsim.schema import Field


#: (images, pixels per image) of each base dataset
BASES = {"digits": (1797, 64), "mnist": (5000, 784)}


@dataclass
class RotatedDataset(RawDataset):
    """A RawDataset whose samples carry ``angle[n]``, the index of their rotation in ``angles``."""

    angle: np.ndarray | None = None
    angles: tuple[float, ...] = ()


def rotate_images(x: np.ndarray, degrees: float) -> np.ndarray:
    """Rotate images ``[n, C, H, W]`` counter-clockwise about their centre (bilinear, same size)."""
    from scipy import ndimage                         # 0.3 s to import: only for this dataset

    out = ndimage.rotate(x, degrees, axes=(3, 2), reshape=False, order=1, mode="constant")
    return np.clip(out, 0.0, 1.0).astype(np.float32)


@dataset("rotated", {
    "base": Field("str", "digits", "bundled image dataset to rotate", choices=("digits", "mnist")),
    "angles": Field("list", [0.0, 15.0, 90.0, 180.0], "rotation of each cluster, in degrees",
                    item="float"),
}, lambda spec: DatasetInfo("classification", 10, image=True, size=generated_size(
        "angles", BASES[spec["base"]][0] * len(spec["angles"]), BASES[spec["base"]][1])))
def rotated(rng: np.random.Generator, base: str, angles: list[float]) -> RotatedDataset:
    """Every image of ``base`` once per angle in ``angles`` (used with the ``rotations`` partition)."""
    if not angles:
        raise ConfigError("data.dataset.angles", angles, "a non-empty list of angles in degrees")
    raw = load_dataset(base, rng)
    x = np.concatenate([rotate_images(raw.x, a) for a in angles])
    return RotatedDataset(x, np.tile(raw.y, len(angles)), raw.num_classes, raw.input_shape,
                          raw.task, "rotated", angle=np.repeat(np.arange(len(angles)), len(raw)),
                          angles=tuple(angles))


@PARTITIONS.register("rotations", {"sizes": _SIZES})
def rotations(ds: RawDataset, n_clients: int, rng: np.random.Generator,
              sizes: list[int] | None) -> Partition:
    """Cluster k (contiguous clients, one cluster per angle of the ``rotated`` dataset) sees the
    images rotated by ``angles[k]``; the base images are split IID and disjointly over all clients."""
    if not isinstance(ds, RotatedDataset):
        raise ConfigError("name", "rotations", f"a partition of the 'rotated' dataset only "
                          f"(dataset {ds.name!r} has no rotations)")
    k = len(ds.angles)
    if k > n_clients:
        raise ConfigError("name", "rotations", f"at most {n_clients} angles, one cluster each "
                          f"(the dataset has {k})")
    if sizes is not None and (len(sizes) != k or sum(sizes) != n_clients):
        raise ConfigError("sizes", sizes, f"{k} positive ints (one per angle) summing to "
                          f"{n_clients} clients")
    cluster = _cluster_ids(n_clients, k, sizes)
    n_base = len(ds) // k
    parts = _iid(np.arange(n_base), n_clients, rng)
    indices = [part + cluster[i] * n_base for i, part in enumerate(parts)]
    return Partition(indices, cluster, [f"{ds.angles[c]:g} deg" for c in cluster])

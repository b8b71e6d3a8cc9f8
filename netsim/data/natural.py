"""LEAF's natural split (registered into ``PARTITIONS`` on import): one client per writer.

The dataset must tag its samples with ``meta["writer"]`` (``femnist``, ``shakespeare``). Each
client holds every sample of one writer; with more writers than clients, ``choose`` picks which
writers take part (a seeded random choice, or those with the most samples).
"""
from __future__ import annotations

import numpy as np

from netsim.data.datasets import RawDataset
from netsim.data.partitions import PARTITIONS, Partition
from netsim.errors import ConfigError
from netsim.schema import Field


@PARTITIONS.register("natural", {
    "choose": Field("str", "random", "which writers become clients when there are more writers "
                    "than clients: random or largest (most samples)",
                    choices=("random", "largest")),
})
def natural(ds: RawDataset, n_clients: int, rng: np.random.Generator, choose: str) -> Partition:
    """LEAF's natural split: one client per writer (meta["writer"]), all of that writer's samples."""
    if "writer" not in ds.meta:
        raise ConfigError("name", "natural", f"a partition of a dataset with writers: femnist, "
                          f"shakespeare (dataset {ds.name!r} has none)")
    writer = ds.meta["writer"]
    counts = np.bincount(writer)
    present = np.flatnonzero(counts)
    if n_clients > len(present):
        raise ConfigError("clients", n_clients, f"at most {len(present)} clients, one per writer "
                          f"of dataset {ds.name!r}")
    if choose == "largest":
        chosen = present[np.argsort(-counts[present], kind="stable")[:n_clients]]
    else:
        chosen = rng.choice(present, n_clients, replace=False)
    order = np.argsort(writer, kind="stable")
    by_writer = np.split(order, np.cumsum(counts)[:-1])
    return Partition([by_writer[w] for w in chosen])

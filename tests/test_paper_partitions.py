"""The papers' data splits: Pachinko allocation and the generic partitions' paper settings."""
from __future__ import annotations

import numpy as np
import pytest

from netsim.data import PARTITIONS, RawDataset, make_partition
from netsim.data.paper_partitions import _draws_without_replacement
from netsim.errors import ConfigError

FINE, COARSE, PER_CLASS = 100, 20, 60     # 5 fine labels per coarse label, 6,000 samples


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def synthetic(classes: int = FINE, coarse: bool = True, per_class: int = PER_CLASS) -> RawDataset:
    """``per_class`` samples per class, shuffled; x = the sample's index; coarse = fine // 5."""
    y = rng(99).permutation(np.repeat(np.arange(classes), per_class))
    meta = {"coarse": y // (classes // COARSE)} if coarse else {}
    return RawDataset(np.arange(len(y), dtype=np.float32)[:, None], y, classes, (1,),
                      "classification", "synthetic", meta=meta)


@pytest.fixture(scope="module")
def ds() -> RawDataset:
    return synthetic()


def assert_disjoint(part, total: int | None = None) -> np.ndarray:
    every = np.concatenate(part.indices)
    assert len(np.unique(every)) == len(every)
    if total is not None:
        assert np.array_equal(np.sort(every), np.arange(total))
    return every


def coarse_shares(ds, part) -> np.ndarray:
    """[N, COARSE] share of each client's samples per coarse label."""
    h = np.stack([np.bincount(ds.meta["coarse"][i], minlength=COARSE) for i in part.indices])
    return h / h.sum(1, keepdims=True)


# --- pachinko ---------------------------------------------------------------------------------

def test_pachinko_registered_with_pdbo_defaults():
    fields = PARTITIONS.get("pachinko", "name").fields
    assert (fields["alpha"].default, fields["beta"].default) == (0.4, 10.0)
    assert fields["samples_per_client"].default is None


def test_pachinko_sizes_and_disjoint(ds):
    part = make_partition({"name": "pachinko", "samples_per_client": 150}, ds, 12, rng())
    assert [len(i) for i in part.indices] == [150] * 12
    assert_disjoint(part)
    assert (part.cluster == -1).all()
    # default: len // N each; with N | len every sample is used once (labels run out and the
    # last clients take what is left)
    part = make_partition("pachinko", ds, 10, rng())
    assert [len(i) for i in part.indices] == [600] * 10
    assert_disjoint(part, len(ds))


def test_pachinko_concentrates_on_few_coarse_labels_for_small_alpha(ds):
    def stats(alpha: float) -> tuple[float, float]:
        part = make_partition({"name": "pachinko", "alpha": alpha, "samples_per_client": 200},
                              ds, 10, rng(3))
        shares = coarse_shares(ds, part)
        top2 = np.sort(shares, 1)[:, -2:].sum(1).mean()
        return float(top2), float((shares > 0.02).sum(1).mean())

    top2_small, used_small = stats(0.1)
    top2_large, used_large = stats(100.0)
    assert top2_small > 0.7 and used_small < 6       # Dir(0.1): a few superclasses per client
    assert top2_large < 0.2 and used_large > 17      # Dir(100): nearly all 20, evenly


def test_pachinko_fine_labels_follow_beta(ds):
    """Within a coarse label, Dir(0.01) puts a client's samples on one fine label, Dir(100) on all
    five: mean number of fine labels per (client, coarse label with >= 20 of its samples)."""
    def fine_per_coarse(beta: float) -> float:
        part = make_partition({"name": "pachinko", "beta": beta, "samples_per_client": 100},
                              ds, 10, rng(4))
        coarse = ds.meta["coarse"]
        return float(np.mean([len(np.unique(ds.y[i][coarse[i] == c]))
                              for i in part.indices for c in range(COARSE)
                              if (coarse[i] == c).sum() >= 20]))

    assert fine_per_coarse(0.01) < 1.3 and fine_per_coarse(100.0) > 4.5


def test_pachinko_reproducible(ds):
    spec = {"name": "pachinko", "samples_per_client": 300}
    a, b, c = (make_partition(spec, ds, 8, rng(s)) for s in (5, 5, 6))
    assert all(np.array_equal(i, j) for i, j in zip(a.indices, b.indices))
    assert not all(np.array_equal(i, j) for i, j in zip(a.indices, c.indices))


def test_draws_without_replacement_is_the_sequential_rule():
    """Rounds of multinomials give the counts of one-at-a-time draws with renormalisation."""
    p, left, n, reps = np.array([0.6, 0.3, 0.1]), np.array([3, 10, 10]), 12, 4000
    g = rng(7)
    draws = np.stack([_draws_without_replacement(n, p, left, g) for _ in range(reps)])
    assert (draws.sum(1) == n).all() and (draws <= left).all()
    sequential = np.zeros(3)
    for _ in range(reps):
        counts = np.zeros(3, np.int64)
        for _ in range(n):
            w = np.where(counts < left, p, 0.0)
            counts[g.choice(3, p=w / w.sum())] += 1
        sequential += counts / reps
    assert np.abs(draws.mean(0) - sequential).max() < 0.1


def test_pachinko_errors(ds):
    with pytest.raises(ConfigError) as err:
        make_partition("pachinko", synthetic(coarse=False), 4, rng())
    assert err.value.field == "data.partition.name" and "cifar100" in str(err.value)
    with pytest.raises(ConfigError) as err:
        make_partition({"name": "pachinko", "samples_per_client": 601}, ds, 10, rng())
    assert err.value.field == "data.partition.samples_per_client" and "600" in err.value.allowed
    for key, bad in (("alpha", 0), ("beta", -1.0), ("samples_per_client", 0)):
        with pytest.raises(ConfigError) as err:
            make_partition({"name": "pachinko", key: bad}, ds, 10, rng())
        assert err.value.field == f"data.partition.{key}"


# --- the other papers' splits as options of the generic partitions ----------------------------

def test_dpfl_dirichlet_with_minimum_size():
    """DPFL Dir(0.1): per-class Dir(0.1) over clients, redrawn until every client has >= 20."""
    ds = synthetic(10, coarse=False, per_class=600)
    part = make_partition({"name": "dirichlet", "alpha": 0.1, "min_size": 20}, ds, 20, rng())
    assert_disjoint(part, len(ds))
    assert min(len(i) for i in part.indices) >= 20


def test_dpfl_pathological_with_dirichlet_shares():
    """DPFL Patho(3): 3 classes per client, a class split among its holders by Dir(0.5)."""
    ds = synthetic(10, coarse=False)
    for within in (None, 0.5):
        part = make_partition({"name": "pathological", "classes_per_client": 3,
                               "dirichlet_within": within}, ds, 20, rng())
        assert_disjoint(part, len(ds))
        assert all(len(np.unique(ds.y[i])) == 3 for i in part.indices)
        sizes = np.array([len(i) for i in part.indices])
        if within is None:
            assert sizes.max() - sizes.min() <= 3        # equal shares of 60 among 6 holders
        else:
            assert sizes.max() > 2 * sizes.min()


def test_diple_two_classes_per_client():
    ds = synthetic(10, coarse=False)
    part = make_partition({"name": "pathological", "classes_per_client": 2}, ds, 5, rng())
    every = assert_disjoint(part, len(ds))
    held = [set(np.unique(ds.y[i])) for i in part.indices]
    assert all(len(h) == 2 for h in held) and set().union(*held) == set(range(10))
    assert len(every) == 5 * 2 * PER_CLASS


def test_cobo_cross_device_class_clusters(ds):
    """CoBo cross-device: 10 clusters of 6, 6, 7, ..., 10 = 80 clients, cluster g holds classes
    [10 g, 10 g + 10), labels renumbered y mod 10."""
    sizes = [6, 6, 7, 7, 8, 8, 9, 9, 10, 10]
    part = make_partition({"name": "class_clusters", "clusters": 10, "sizes": sizes,
                           "local_labels": True}, ds, 80, rng())
    assert_disjoint(part, len(ds))
    assert np.array_equal(np.bincount(part.cluster), sizes)
    for i, g in zip(part.indices, part.cluster):
        assert set(np.unique(ds.y[i])) <= set(range(10 * g, 10 * g + 10))
    assert np.array_equal(part.label_map, np.tile(np.arange(100) % 10, (80, 1)))


def test_cobo_cross_silo_shift_step(ds):
    """CoBo cross-silo on CIFAR-100: cluster g sees label (y + 11 g) mod 100; default step 1."""
    spec = {"name": "label_permutation", "clusters": 4, "replicate": True, "shift": True}
    part = make_partition({**spec, "shift_step": 11}, ds, 8, rng())
    y = np.arange(100)
    for i, g in enumerate(part.cluster):
        assert np.array_equal(part.label_map[i], (y + 11 * g) % 100)
    default = make_partition(spec, ds, 8, rng())
    assert np.array_equal(default.label_map[-1], (y + 3) % 100)
    assert all(np.array_equal(a, b) for a, b in zip(part.indices, default.indices))
    with pytest.raises(ConfigError) as err:          # shifts 0, 50, 0, 50: not distinct
        make_partition({**spec, "shift_step": 50}, ds, 8, rng())
    assert err.value.field == "data.partition.shift_step"

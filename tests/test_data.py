"""Datasets, partitions, per-client splits, ClientData batching and the partition figure."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from netsim.data import (DATASETS, PARTITIONS, ClientData, build_client_data, client_arrays,
                         client_splits, load_dataset, make_partition, validate_data)
from netsim.errors import ConfigError


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits", rng())


def max_class_share(ds, part) -> float:
    shares = [np.bincount(ds.y[idx], minlength=ds.num_classes).max() / len(idx)
              for idx in part.indices]
    return float(np.mean(shares))


# --- loaders ---------------------------------------------------------------------------------

def test_digits_loader(digits):
    assert digits.x.shape == (1797, 1, 8, 8) and digits.x.dtype == np.float32
    assert digits.x.min() == 0.0 and digits.x.max() == 1.0
    assert digits.y.dtype == np.int64 and set(np.unique(digits.y)) == set(range(10))
    assert (digits.num_classes, digits.input_shape, digits.task) == (10, (1, 8, 8), "classification")


def test_digits_read_from_scikit_learns_file_are_load_digits(digits, monkeypatch):
    """Read from digits.csv.gz without importing scikit-learn: the arrays ``load_digits`` gives
    (and the fallback through ``load_digits`` where the file is not found gives them too)."""
    from sklearn.datasets import load_digits

    from netsim.data import datasets
    assert datasets._digits_file() is not None
    ref = load_digits()
    np.testing.assert_array_equal(digits.x.reshape(1797, 64), (ref.data / 16.0).astype(np.float32))
    np.testing.assert_array_equal(digits.y, ref.target)
    monkeypatch.setattr(datasets, "_digits_file", lambda: None)
    datasets._digits_arrays.cache_clear()
    try:
        x, y = datasets._digits_arrays()
    finally:
        datasets._digits_arrays.cache_clear()
    np.testing.assert_array_equal(x, digits.x)
    np.testing.assert_array_equal(y, digits.y)


def test_mnist_loader():
    ds = load_dataset("mnist", rng())
    assert ds.x.shape == (5000, 1, 28, 28) and ds.x.dtype == np.float32
    assert ds.x.min() == 0.0 and ds.x.max() == 1.0
    assert ds.y.shape == (5000,) and set(np.unique(ds.y)) == set(range(10))
    assert ds.input_shape == (1, 28, 28)


def test_gaussian_mixture():
    spec = {"name": "gaussian_mixture", "n_samples": 400, "dim": 5, "classes": 4, "separation": 6.0}
    ds = load_dataset(spec, rng())
    assert ds.x.shape == (400, 5) and np.bincount(ds.y).tolist() == [100] * 4
    means = np.stack([ds.x[ds.y == c].mean(0) for c in range(4)])
    assert np.allclose(np.linalg.norm(means, axis=1), 6.0, atol=0.5)
    np.testing.assert_array_equal(load_dataset(spec, rng(1)).x, load_dataset(spec, rng(1)).x)


def test_every_component_has_a_schema_and_doc():
    for reg in (DATASETS, PARTITIONS):
        for comp in reg.items():
            assert comp.doc, comp.name


# --- splits ----------------------------------------------------------------------------------

def test_iid_sizes_add_up_and_splits_disjoint(digits):
    part = make_partition("iid", digits, 7, rng())
    assert sorted(np.concatenate(part.indices)) == list(range(1797))
    splits = client_splits(part.indices, 0.15, 0.25, None, rng())
    for i, idx in enumerate(part.indices):
        tr, va, te = (splits[s][i] for s in ("train", "val", "test"))
        assert len(tr) + len(va) + len(te) == len(idx)
        assert (len(va), len(te)) == (int(0.15 * len(idx)), int(0.25 * len(idx)))
        assert len(set(tr) | set(va) | set(te)) == len(idx)
        assert set(tr) | set(va) | set(te) == set(idx)


def test_max_samples_per_client(digits):
    cd = build_client_data({"dataset": "digits", "max_samples_per_client": 40, "val_fraction": 0.1,
                            "test_fraction": 0.2}, 5, rng())
    assert cd.n["train"].tolist() == [28] * 5
    assert cd.n["val"].tolist() == [4] * 5 and cd.n["test"].tolist() == [8] * 5


def test_build_is_deterministic_and_shaped():
    cfg = {"dataset": "digits", "partition": {"name": "dirichlet", "alpha": 0.5}}
    a, b = (build_client_data(cfg, 6, rng(3)) for _ in range(2))
    for s in ("train", "val", "test"):
        assert torch.equal(a.x[s], b.x[s]) and torch.equal(a.y[s], b.y[s])
        assert a.x[s].shape[:2] == a.y[s].shape and a.x[s].shape[2:] == (1, 8, 8)
        assert a.x[s].dtype == torch.float32 and a.y[s].dtype == torch.int64
    assert int(sum(a.n[s].sum() for s in ("train", "val", "test"))) == 1797
    c = build_client_data(cfg, 6, rng(4))
    assert not torch.equal(a.n["train"], c.n["train"])
    # padding rows are zero
    _, y, mask = a.full("train")
    assert float(a.x["train"][~mask].abs().sum()) == 0.0 and int(y[~mask].abs().sum()) == 0


# --- partitions ------------------------------------------------------------------------------

def test_dirichlet_skew(digits):
    skewed = make_partition({"name": "dirichlet", "alpha": 0.1, "min_size": 10}, digits, 10, rng())
    flat = make_partition({"name": "dirichlet", "alpha": 100.0}, digits, 10, rng())
    assert max_class_share(digits, skewed) > 0.6
    assert max_class_share(digits, flat) < 0.2
    for part in (skewed, flat):
        assert min(len(i) for i in part.indices) >= 10
        assert sorted(np.concatenate(part.indices)) == list(range(1797))


def test_label_permutation_shift_gives_every_class_a_different_label_per_cluster(digits):
    spec = {"name": "label_permutation", "clusters": 4, "replicate": True}
    part = make_partition({**spec, "shift": True}, digits, 8, rng())
    for g in range(4):
        np.testing.assert_array_equal(part.label_map[2 * g], (np.arange(10) + g) % 10)
    assert (part.label_map[[0, 2, 4, 6]] != part.label_map[[2, 4, 6, 0]]).all()
    random = make_partition(spec, digits, 8, rng())   # same data split, other maps
    assert all((a == b).all() for a, b in zip(part.indices, random.indices))


@pytest.mark.parametrize("within", [None, 0.5])
def test_pathological_k_classes(digits, within):
    part = make_partition({"name": "pathological", "classes_per_client": 3,
                           "dirichlet_within": within}, digits, 12, rng())
    for idx in part.indices:
        assert len(np.unique(digits.y[idx])) == 3
    flat = np.concatenate(part.indices)
    assert len(flat) == len(set(flat)) == 1797  # 12 * 3 = 36 slots cover every class
    if within is None:
        sizes = [len(i) for i in part.indices]
        assert max(sizes) - min(sizes) < 0.35 * np.mean(sizes)


def test_pathological_random_assignment_draws_each_clients_classes_independently(digits):
    spec = {"name": "pathological", "classes_per_client": 3, "assignment": "random"}
    parts = [make_partition(spec, digits, 40, rng(s)) for s in (0, 0, 1)]
    held = [[frozenset(np.unique(digits.y[i]).tolist()) for i in p.indices] for p in parts]
    assert held[0] == held[1] != held[2]                         # reproducible per seed
    assert all(len(h) == 3 for h in held[0])
    counts = np.bincount([c for h in held[0] for c in h], minlength=10)
    assert counts.max() - counts.min() > 3            # not the even spread (12 +- 1 holders each)
    flat = np.concatenate(parts[0].indices)
    assert len(flat) == len(set(flat))


@pytest.mark.parametrize("replicate", [False, True])
def test_label_permutation(digits, replicate):
    part = make_partition({"name": "label_permutation", "clusters": 3, "replicate": replicate},
                          digits, 7, rng())
    assert part.cluster.tolist() == [0, 0, 0, 1, 1, 2, 2]
    maps = part.label_map
    np.testing.assert_array_equal(maps[:3], np.tile(np.arange(10), (3, 1)))
    assert (maps[3] == maps[4]).all() and (maps[5] == maps[6]).all()
    assert len({tuple(m) for m in maps}) == 3
    assert all(sorted(m) == list(range(10)) for m in maps)
    xs, ys = client_arrays(digits, part, part.indices)
    for i, idx in enumerate(part.indices):
        np.testing.assert_array_equal(ys[i], maps[i][digits.y[idx]])
        np.testing.assert_array_equal(xs[i], digits.x[idx])
    if replicate:  # each cluster splits the whole dataset among its members
        for k, members in ((0, [0, 1, 2]), (1, [3, 4])):
            flat = np.concatenate([part.indices[i] for i in members])
            assert sorted(flat) == list(range(1797)), k
    else:
        assert sorted(np.concatenate(part.indices)) == list(range(1797))


def test_class_clusters(digits):
    part = make_partition({"name": "class_clusters", "clusters": 3, "sizes": [2, 3, 4]},
                          digits, 9, rng())
    assert part.cluster.tolist() == [0, 0, 1, 1, 1, 2, 2, 2, 2]
    classes = [set(np.unique(np.concatenate([digits.y[part.indices[i]]
                                             for i in np.flatnonzero(part.cluster == k)])))
               for k in range(3)]
    assert classes == [{0, 1, 2, 3}, {4, 5, 6}, {7, 8, 9}]
    for i, idx in enumerate(part.indices):
        assert set(np.unique(digits.y[idx])) == classes[part.cluster[i]]
    assert sorted(np.concatenate(part.indices)) == list(range(1797))
    local = make_partition({"name": "class_clusters", "clusters": 3, "local_labels": True},
                           digits, 9, rng())
    np.testing.assert_array_equal(local.label_map[0], [0, 1, 2, 3, 0, 1, 2, 0, 1, 2])


def test_feature_shift(digits):
    spec = {"name": "feature_shift", "clusters": 3, "dirichlet": None,
            "scale": [0.5, 2.0], "shift": [-0.5, 0.5]}
    part = make_partition(spec, digits, 6, rng())
    fs = part.feature_shift
    np.testing.assert_array_equal(fs[:2], [[1.0, 0.0]] * 2)
    assert (fs[2] == fs[3]).all() and (fs[4] == fs[5]).all() and not (fs[2] == fs[4]).all()
    assert ((fs[2:, 0] >= 0.5) & (fs[2:, 0] <= 2.0)).all()
    assert ((fs[2:, 1] >= -0.5) & (fs[2:, 1] <= 0.5)).all()
    xs, _ = client_arrays(digits, part, part.indices)
    base_mean, base_std = digits.x.mean(), digits.x.std()
    for k in range(3):
        x = np.concatenate([xs[i] for i in np.flatnonzero(part.cluster == k)])
        scale, shift = fs[2 * k]
        assert abs(x.mean() - (scale * base_mean + shift)) < 0.03
        assert abs(x.std() - scale * base_std) < 0.03
    dirichlet = make_partition({"name": "feature_shift", "clusters": 2, "dirichlet": 0.1},
                               digits, 6, rng())
    assert max_class_share(digits, dirichlet) > 0.5


def test_label_flip(digits):
    part = make_partition({"name": "label_flip", "share": 0.4,
                           "base": {"name": "dirichlet", "alpha": 1.0}}, digits, 10, rng())
    bad = part.cluster == 1
    assert bad.sum() == 4
    assert part.group == ["malicious" if b else "benign" for b in bad]
    np.testing.assert_array_equal(part.label_map[~bad], np.tile(np.arange(10), (6, 1)))
    flips = part.label_map[bad]
    assert (flips == flips[0]).all() and not (flips[0] == np.arange(10)).all()
    assert sorted(flips[0]) == list(range(10))
    for share, count in ((0.0, 0), (1.0, 10), (0.25, 3)):
        p = make_partition({"name": "label_flip", "share": share}, digits, 10, rng())
        assert (p.cluster == 1).sum() == count


# --- cluster-structured synthetic tasks ---------------------------------------------------------

def test_clustered_linear_regression():
    cfg = {"dataset": {"name": "clustered_linear_regression", "n_samples": 1200, "dim": 4,
                       "noise": 0.01},
           "partition": {"name": "clusters", "clusters": 2}, "val_fraction": 0.0,
           "test_fraction": 0.0}
    cd = build_client_data(cfg, 4, rng())
    assert cd.task == "regression" and cd.y["train"].shape == (4, 300, 1)
    w = [np.linalg.lstsq(cd.x["train"][i].numpy(), cd.y["train"][i, :, 0].numpy(), rcond=None)[0]
         for i in range(4)]
    assert np.allclose(w[0], w[1], atol=0.01) and np.allclose(w[2], w[3], atol=0.01)
    assert np.abs(w[0] - w[2]).max() > 0.1


def test_cobo_quadratic():
    cfg = {"dataset": {"name": "cobo_quadratic", "n_samples": 4000, "dim": 3, "sigma": 0.5,
                       "spread": 2.0, "curvature": [0.5, 2.0]},
           "partition": {"name": "clusters", "clusters": 2}}
    cd = build_client_data(cfg, 4, rng())
    assert cd.input_shape == (1,) and cd.num_classes == 3
    assert float(cd.x["train"].abs().sum()) == 0.0 and cd.y["train"].shape[2] == 3
    mu = [cd.y["train"][i, :cd.n["train"][i]].mean(0).numpy() for i in range(4)]
    assert np.allclose(mu[0], mu[1], atol=0.1) and np.allclose(mu[2], mu[3], atol=0.1)
    assert np.abs(mu[0] - mu[2]).max() > 0.5
    spread = [cd.y["train"][i, :cd.n["train"][i]].std(0).numpy() for i in range(4)]
    assert np.allclose(spread, 0.5, atol=0.05)
    a = cd.loss_scale.numpy()
    assert a.dtype == np.float32 and ((a >= 0.5) & (a <= 2.0)).all() and len(set(a)) == 4
    assert build_client_data({"dataset": "digits"}, 3, rng()).loss_scale.tolist() == [1.0] * 3


# --- ClientData batching -----------------------------------------------------------------------

@pytest.fixture()
def tiny() -> ClientData:
    """Clients of 1, 3 and 5 training rows; x = 100 * client + row + 1, y = row."""
    sizes = {"train": [1, 3, 5], "val": [0, 1, 2], "test": [1, 1, 1]}
    x = {s: [(100 * i + np.arange(m) + 1).astype(np.float32)[:, None] for i, m in enumerate(ns)]
         for s, ns in sizes.items()}
    y = {s: [np.arange(m) for m in ns] for s, ns in sizes.items()}
    return ClientData.from_clients(x, y, num_classes=5, input_shape=(1,), task="classification")


def test_sample_batch_only_valid_rows(tiny):
    gen = torch.Generator().manual_seed(0)
    x, y = tiny.sample_batch("train", 400, gen)
    assert x.shape == (3, 400, 1) and y.shape == (3, 400)
    client, row = (x[..., 0].long() - 1) // 100, (x[..., 0].long() - 1) % 100
    assert (client == torch.arange(3)[:, None]).all()
    assert (row == y).all()
    for i, n in enumerate([1, 3, 5]):
        assert set(row[i].tolist()) == set(range(n))  # all valid rows drawn, nothing else
    x2, _ = tiny.sample_batch("train", 400, torch.Generator().manual_seed(0))
    assert torch.equal(x, x2)
    x3, _ = tiny.sample_batch("train", 400, torch.Generator().manual_seed(1))
    assert not torch.equal(x, x3)


def test_sample_batch_subset_and_full(tiny):
    x, y = tiny.sample_batch("train", 8, torch.Generator().manual_seed(0), torch.tensor([2, 0]))
    assert x.shape == (2, 8, 1)
    assert ((x[0, :, 0] > 200) & (x[0, :, 0] <= 205)).all() and (x[1, :, 0] == 1).all()
    xf, yf, mask = tiny.full("val")
    assert xf.shape == (3, 2, 1) and mask.tolist() == [[False, False], [True, False], [True, True]]
    _, _, mask = tiny.full("train", torch.tensor([1]))
    assert mask.tolist() == [[True, True, True, False, False]]
    np.testing.assert_array_equal(tiny.class_counts("train"),
                                  [[1, 0, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])


# --- errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("section, n, field", [
    ({"dataset": "digits", "partition": {"name": "label_permutation", "clusters": 5}}, 4,
     "data.partition.clusters"),
    ({"dataset": "digits", "partition": {"name": "label_permutation", "clusters": 11,
                                         "shift": True}}, 20, "data.partition.clusters"),
    ({"dataset": "digits", "partition": {"name": "class_clusters", "clusters": 11}}, 20,
     "data.partition.clusters"),
    ({"dataset": "digits", "partition": {"name": "pathological", "classes_per_client": 11}}, 4,
     "data.partition.classes_per_client"),
    ({"dataset": "digits", "partition": {"name": "class_clusters", "clusters": 2,
                                         "sizes": [2, 3]}}, 4, "data.partition.sizes"),
    ({"dataset": "digits", "partition": {"name": "clusters", "clusters": 2, "sizes": [4]}}, 4,
     "data.partition.sizes"),
    ({"dataset": "digits", "partition": {"name": "dirichlet", "alpha": 0.0}}, 4,
     "data.partition.alpha"),
    ({"dataset": "digits", "partition": {"name": "dirichlet", "alpha": -1}}, 4,
     "data.partition.alpha"),
    ({"dataset": "digits", "partition": {"name": "label_flip", "share": 1.5}}, 4,
     "data.partition.share"),
    ({"dataset": "digits", "partition": {"name": "label_flip", "share": -0.1}}, 4,
     "data.partition.share"),
    ({"dataset": "digits", "partition": {"name": "label_flip",
                                         "base": {"name": "clusters", "clusters": 9}}}, 4,
     "data.partition.base.clusters"),
    ({"dataset": "digits", "partition": {"name": "label_flip", "base": "label_flip"}}, 4,
     "data.partition.base.name"),
    ({"dataset": "cobo_quadratic", "partition": "dirichlet"}, 4, "data.partition.name"),
    ({"dataset": "digits", "partition": "nope"}, 4, "data.partition.name"),
    ({"dataset": {"name": "gaussian_mixture", "classes": 1}}, 4, "data.dataset.classes"),
    ({"dataset": "imagenet"}, 4, "data.dataset.name"),
    ({"dataset": "digits", "val_fraction": 1.0}, 4, "data.val_fraction"),
    ({"dataset": "digits", "val_fraction": 0.5, "test_fraction": 0.5}, 4, "data.test_fraction"),
    ({"dataset": "digits", "colour": 1}, 4, "data.colour"),
    ({}, 4, "data.dataset"),
])
def test_validation_errors(section, n, field):
    with pytest.raises(ConfigError) as err:
        validate_data(section, n)
    assert err.value.field == field and str(err.value).startswith(field + ":")


@pytest.mark.parametrize("section, n, field, words", [
    ({"dataset": {"name": "gaussian_mixture", "n_samples": 5}}, 6, "data.partition", "client 5"),
    ({"dataset": {"name": "gaussian_mixture", "n_samples": 8},
      "partition": {"name": "class_clusters", "clusters": 2, "sizes": [1, 5]}}, 6,
     "data.partition", "client 5"),
    ({"dataset": "digits", "partition": {"name": "dirichlet", "min_size": 200}}, 10,
     "data.partition.min_size", "179"),
    ({"dataset": "digits", "partition": {"name": "dirichlet", "alpha": 0.1, "min_size": 150}}, 10,
     "data.partition.min_size", "attempts"),
    ({"dataset": "digits", "partition": {"name": "label_flip", "base": {
        "name": "dirichlet", "min_size": 500}}}, 4, "data.partition.base.min_size", "449"),
])
def test_build_errors(section, n, field, words):
    validate_data(section, n)  # only detectable once the data is there
    with pytest.raises(ConfigError) as err:
        build_client_data(section, n, rng())
    assert err.value.field == field and words in str(err.value)


def test_validate_fills_defaults():
    out = validate_data({"dataset": "digits"}, 3)
    assert out == {"dataset": {"name": "digits"}, "root": None, "partition": {"name": "iid"},
                   "val_fraction": 0.15, "test_fraction": 0.25, "max_samples_per_client": None,
                   "augment": {"crop_padding": 0, "padding_mode": "constant", "flip": False}}
    flip = validate_data({"dataset": "digits", "partition": "label_flip"}, 3)["partition"]
    assert flip == {"name": "label_flip", "share": 0.4, "base": {"name": "iid"}}


# --- figure --------------------------------------------------------------------------------------

def test_partition_figure(tmp_path):
    from netsim.plot.partition import plot_partition
    cd = build_client_data({"dataset": "digits", "partition": {"name": "class_clusters",
                                                               "clusters": 2}}, 6, rng())
    out = plot_partition(cd, tmp_path / "fig" / "partition.png")
    assert out.exists() and out.read_bytes()[:4] == b"\x89PNG" and out.stat().st_size > 5000
    reg = build_client_data({"dataset": {"name": "cobo_quadratic", "n_samples": 300},
                             "partition": {"name": "clusters", "clusters": 3}}, 6, rng())
    assert plot_partition(reg, tmp_path / "reg.png").stat().st_size > 5000

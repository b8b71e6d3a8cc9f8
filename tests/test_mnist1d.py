"""MNIST-1D (netsim/data/mnist1d.py) and the 1-D CNN ``cnn1d``: deterministic generation from
the data seed, no leak of the package's global seeding, no network, the on-disk cache, the
batched model against its per-client reference, and short runs that learn."""
from __future__ import annotations

import random
import socket

import numpy as np
import pytest
import torch

from netsim import Scenario, run
from netsim.data import DATASETS, build_client_data, load_dataset
from netsim.data import mnist1d as m1d
from netsim.errors import ConfigError
from netsim.models import build_model
from netsim.util.rng import Streams

SMALL = 1000


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Every test gets its own empty cache folder."""
    monkeypatch.setenv(m1d.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def _no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("mnist1d tried to use the network")
    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    requests = pytest.importorskip("requests")
    monkeypatch.setattr(requests, "get", refuse)
    monkeypatch.setattr(requests.Session, "request", refuse)


def _load(seed: int, samples: int = SMALL):
    return load_dataset({"name": "mnist1d", "samples": samples}, np.random.default_rng(seed))


def test_same_seed_bit_identical_other_seed_differs_without_network(monkeypatch, cache):
    _no_network(monkeypatch)
    a = _load(0)
    assert a.x.shape == (SMALL, 1, 40) and a.x.dtype == np.float32
    assert a.y.shape == (SMALL,) and a.y.dtype == np.int64
    assert a.input_shape == (1, 40) and a.num_classes == 10 and a.task == "classification"
    assert np.bincount(a.y, minlength=10).tolist() == [SMALL // 10] * 10
    assert abs(float(a.x.mean())) < 1e-3 and abs(float(a.x.std()) - 1) < 1e-3
    # regenerated from scratch (not the cache): bit-identical
    seed = int(np.random.default_rng(0).integers(0, 2 ** 32))
    x, y = m1d.generate(SMALL, seed)
    assert x.tobytes() == a.x.tobytes() and y.tobytes() == a.y.tobytes()
    b = _load(1)
    assert not np.array_equal(a.x, b.x)
    assert len(list((cache / "mnist1d").glob("*.npz"))) == 2
    assert not [p for p in (cache / "mnist1d").iterdir() if p.name.startswith(".")]  # no temp


def test_global_random_state_is_untouched_and_streams_unchanged():
    streams = Streams(0)
    before = {name: streams.numpy(name).random(4) for name in ("data", "init", "training")}
    torch_before = streams.torch("init").initial_seed()
    np.random.seed(123)
    random.seed(456)
    np_state, py_state = np.random.get_state(), random.getstate()
    m1d.generate(200, 7)
    after_np, after_py = np.random.get_state(), random.getstate()
    assert after_np[0] == np_state[0] and np.array_equal(after_np[1], np_state[1])
    assert after_np[2:] == np_state[2:] and after_py == py_state
    assert np.random.random() == np.random.RandomState(123).random()
    assert {name: streams.numpy(name).random(4).tolist() for name in before} == \
        {name: v.tolist() for name, v in before.items()}
    assert streams.torch("init").initial_seed() == torch_before



def test_global_state_restored_when_generation_fails(monkeypatch):
    import mnist1d.data

    def broken(*args, **kwargs):
        raise RuntimeError("broken transform")
    monkeypatch.setattr(mnist1d.data, "transform", broken)
    np.random.seed(9)
    state = np.random.get_state()
    with pytest.raises(RuntimeError, match="broken"):
        m1d.generate(200, 7)
    assert np.array_equal(np.random.get_state()[1], state[1])


def test_cache_hit_does_not_regenerate(monkeypatch, cache):
    a = _load(3, samples=200)
    (path,) = (cache / "mnist1d").glob("*.npz")
    assert "n200" in path.name and path.stat().st_size < 100_000

    def fail(*args, **kwargs):
        raise AssertionError("regenerated despite the cache")
    monkeypatch.setattr(m1d, "generate", fail)
    b = _load(3, samples=200)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
    assert not b.x.flags.writeable
    # the key holds the arguments: other samples miss, and a package upgrade would miss
    with pytest.raises(AssertionError, match="regenerated"):
        _load(3, samples=300)
    monkeypatch.setattr(m1d, "package_version", lambda: "99.0")
    with pytest.raises(AssertionError, match="regenerated"):
        _load(3, samples=200)


def test_a_damaged_cache_file_is_regenerated(cache):
    a = _load(4, samples=100)
    (path,) = (cache / "mnist1d").glob("*.npz")
    path.write_bytes(b"not a zip file")
    b = _load(4, samples=100)
    assert np.array_equal(a.x, b.x) and path.stat().st_size > 100


def test_samples_field_and_registration():
    assert "mnist1d" in DATASETS.names()
    spec = DATASETS.resolve("mnist1d", "data.dataset")
    assert spec["samples"] == 40000 >= 100 * 300
    with pytest.raises(ConfigError, match="samples"):
        DATASETS.resolve({"name": "mnist1d", "samples": 10}, "data.dataset")
    with pytest.raises(ConfigError, match="samples"):
        DATASETS.resolve({"name": "mnist1d", "samples": 1.5}, "data.dataset")


def test_samples_not_a_multiple_of_ten():
    ds = _load(5, samples=105)
    counts = np.bincount(ds.y, minlength=10)
    assert len(ds) == 105 and counts.max() <= 11 and counts.min() >= 6


def test_client_data_split():
    cd = build_client_data({"dataset": {"name": "mnist1d", "samples": 600},
                            "partition": "iid"}, 4,
                           np.random.default_rng(0))
    assert cd.input_shape == (1, 40) and cd.x["train"].shape[2:] == (1, 40)
    assert int(sum(cd.n[s].sum() for s in ("train", "val", "test"))) == 600


# --- cnn1d -----------------------------------------------------------------------------------

def _randn(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("spec", [{"name": "cnn1d"}, {"name": "cnn1d", "pool": "avg"},
                                  {"name": "cnn1d", "pool": "flatten", "channels": [4, 6, 8],
                                   "kernel": 3, "stride": 2, "hidden": [7]}])
@pytest.mark.parametrize("backend", ["loop", "vmap", "grouped"])
def test_cnn1d_batched_equals_per_client_reference(spec, backend):
    model = build_model({**spec, "backend": backend}, (1, 40), 10, "classification")
    assert model.backend == backend
    params = {k: v.requires_grad_() for k, v in
              model.init(3, torch.Generator().manual_seed(0), "cpu").items()}
    x, y = _randn(3, 5, 1, 40), torch.randint(10, (3, 5), generator=torch.Generator())
    out = model.forward(params, x)
    assert out.shape == (3, 5, 10)
    loss = torch.nn.functional.cross_entropy(out.flatten(0, 1), y.flatten(), reduction="sum")
    grads = dict(zip(params, torch.autograd.grad(loss, list(params.values()))))
    for i in range(3):
        ref = model.reference({k: v[i] for k, v in params.items()})
        out_i = ref(x[i])
        torch.testing.assert_close(out[i], out_i, atol=1e-5, rtol=1e-5)
        torch.nn.functional.cross_entropy(out_i, y[i], reduction="sum").backward()
        for name, p in ref.named_parameters():
            torch.testing.assert_close(grads[name][i], p.grad, atol=1e-5, rtol=1e-4)


def test_cnn1d_shapes_counts_and_errors():
    model = build_model("cnn1d", (1, 40), 10, "classification")
    assert model.num_params == 32 * 5 + 32 + 32 * 32 * 5 + 32 + 32 * 10 + 10 == 5674
    assert model.flops_per_sample == 2 * (5 * 32 * 40 + 32 * 5 * 32 * 40 + 32 * 10)
    flat = build_model({"name": "cnn1d", "pool": "flatten", "channels": [8]}, (40,), 3,
                       "classification")
    assert flat.shapes["conv1.weight"] == (8, 1, 5) and flat.shapes["fc1.weight"] == (3, 8 * 40)
    assert flat.forward(flat.init(2, torch.Generator().manual_seed(0), "cpu"),
                        _randn(2, 4, 40)).shape == (2, 4, 3)
    for spec, shape, words in [("cnn1d", (1, 8, 8), "(C, L)"),
                               ({"name": "cnn1d", "channels": []}, (1, 40), "channels"),
                               ({"name": "cnn1d", "pool": "sum"}, (1, 40), "pool"),
                               ("cnn", (1, 40), "2x2")]:
        with pytest.raises(ConfigError) as err:
            build_model(spec, shape, 10, "classification")
        assert words in str(err.value)


# --- whole runs ------------------------------------------------------------------------------

RUN = {
    "name": "mnist1d_tiny", "seed": 0, "clients": 6,
    "data": {"dataset": {"name": "mnist1d", "samples": 2000}, "partition": "iid"},
    "network": {"topology": {"name": "ring"}},
    "train": {"lr": 0.05, "momentum": 0.9, "batch_size": 32, "local_steps": 30},
    "schedule": {"rounds": 3, "eval_every": 3},
    "algorithms": ["local", "fedavg"],
    "outputs": {"figures": False, "progress": False},
}


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("shared_cache")


# measured (seed 0, mean test accuracy): cnn1d 0.813 local / 0.835 fedavg, mlp 0.243 / 0.321
# (seeds 1, 2: cnn1d >= 0.743, mlp >= 0.241); chance is 0.1
@pytest.mark.parametrize("model, floor", [({"name": "cnn1d"}, 0.6),
                                          ({"name": "mlp", "hidden": [64]}, 0.18)])
def test_short_run_learns(tmp_path, monkeypatch, shared_cache, model, floor):
    monkeypatch.setenv(m1d.CACHE_ENV, str(shared_cache))     # generate the data once
    res = run(Scenario({**RUN, "model": model}), out=tmp_path, quiet=True)
    for alg in ("local", "fedavg"):
        acc = res.summary["algorithms"][alg]["mean_accuracy"]
        assert np.isfinite(acc) and acc > floor, (alg, acc)


def test_more_classes_add_random_templates_shaped_like_the_digits(cache):
    """``classes: 20``: the ten digits and ten random templates (deterministic from the seed,
    shaped as the package shapes its digits), 20 balanced classes, their own cache entry; the ten
    digits keep the cache key they had before ``classes`` existed."""
    from mnist1d.data import get_templates

    t = m1d.templates(20, 7)
    assert m1d.templates(10, 7) is None
    np.testing.assert_array_equal(t["x"][:10], get_templates()["x"])
    np.testing.assert_array_equal(t["x"], m1d.templates(20, 7)["x"])
    assert not np.array_equal(t["x"][10:], m1d.templates(20, 8)["x"][10:])
    extra = t["x"][10:] * 6.0                   # whitened, then shifted to start at 0
    np.testing.assert_allclose(extra[:, 0], 0.0, atol=1e-12)
    np.testing.assert_allclose(extra[:, -1], 0.0, atol=1e-12)
    np.testing.assert_allclose(extra.std(1), 1.0, rtol=1e-12)
    assert t["y"].tolist() == list(range(20))
    ds = load_dataset({"name": "mnist1d", "samples": SMALL, "classes": 20},
                      np.random.default_rng(0))
    assert ds.num_classes == 20 and np.bincount(ds.y).tolist() == [SMALL // 20] * 20
    assert m1d.cache_path(SMALL, 3) == m1d.cache_path(SMALL, 3, 10) != m1d.cache_path(SMALL, 3, 20)
    assert len(list((cache / "mnist1d").glob("*.npz"))) == 1
    sc = Scenario({"clients": 4, "data": {"dataset": {"name": "mnist1d", "classes": 20},
                                          "partition": {"name": "class_clusters", "clusters": 2,
                                                        "local_labels": True}},
                   "model": "mlp", "algorithms": ["local"]})
    assert sc.resolve()["data"]["dataset"]["classes"] == 20
    with pytest.raises(ConfigError, match="classes"):
        Scenario({**sc.raw, "data": {"dataset": {"name": "mnist1d", "classes": 5}}}).resolve()

"""Local-file datasets (data.root) on tiny files written in the exact public formats, the natural
partition, and whole runs on them."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from netsim import Scenario, run
from netsim.cli import main
from netsim.data import build_client_data, dataset_info, load_dataset, make_partition, validate_data
from netsim.data.local import LEAF_LETTERS
from netsim.data.standins import (write_idx_pair, write_leaf, write_pickle,
                                    write_standin)
from netsim.errors import ConfigError


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# --- writers of the public formats ------------------------------------------------------------

def cifar_images(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, 3072), dtype=np.uint8)


def write_cifar10(root: Path, per_file: int = 2, sub: str = "cifar-10-batches-py") -> np.ndarray:
    """The six pickles; returns the rows of b"data" in load order."""
    rows = []
    for i, name in enumerate([f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]):
        data = cifar_images(per_file, i)
        write_pickle(root / sub / name, {b"batch_label": b"x", b"data": data,
                                          b"labels": [(i + j) % 10 for j in range(per_file)],
                                          b"filenames": [b"f.png"] * per_file})
        rows.append(data)
    return np.concatenate(rows)


def femnist_samples(n: int, label: int) -> tuple[list, list]:
    return [[float(label) / 62] * 784 for _ in range(n)], [label] * n


def write_femnist(root: Path, per_user: int = 3) -> None:
    write_leaf(root, "train", {"w2": femnist_samples(per_user, 5),
                               "w1": femnist_samples(per_user + 2, 1)})
    write_leaf(root, "test", {"w1": femnist_samples(1, 2), "w3": femnist_samples(per_user, 61)})


def load(name: str, root, seed: int = 0, **params):
    return load_dataset({"name": name, **params}, rng(seed), root=None if root is None else str(root))


# --- CIFAR ------------------------------------------------------------------------------------

def test_cifar10_reads_the_python_batches(tmp_path):
    rows = write_cifar10(tmp_path)
    ds = load("cifar10", tmp_path)
    assert ds.x.shape == (12, 3, 32, 32) and ds.x.dtype == np.float32 and ds.input_shape == (3, 32, 32)
    # row-major RGB planes: [R(1024) G(1024) B(1024)], each 32 rows of 32
    np.testing.assert_allclose(ds.x[3, 0, 0, 1], rows[3, 1] / 255, rtol=1e-6)
    np.testing.assert_allclose(ds.x[3, 1, 2, 0], rows[3, 1024 + 64] / 255, rtol=1e-6)
    np.testing.assert_allclose(ds.x.reshape(12, -1), rows / np.float32(255), rtol=1e-6)
    assert ds.y.dtype == np.int64 and ds.y.tolist()[:4] == [0, 1, 1, 2] and ds.y[-1] == 6
    assert (ds.num_classes, ds.task) == (10, "classification")


def test_cifar10_batches_directly_under_root_and_max_samples(tmp_path):
    write_cifar10(tmp_path, per_file=3, sub="")
    a, b = load("cifar10", tmp_path, max_samples=5), load("cifar10", tmp_path, max_samples=5)
    assert len(a) == 5 and np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
    assert len(load("cifar10", tmp_path, max_samples=100)) == 18


def test_cifar100_fine_coarse_and_meta(tmp_path):
    sub = tmp_path / "cifar-100-python"
    for name, n, seed in (("train", 3, 0), ("test", 2, 1)):
        write_pickle(sub / name, {b"data": cifar_images(n, seed), b"fine_labels": [99 - seed] * n,
                                  b"coarse_labels": [19 - seed] * n, b"filenames": [b"a"] * n})
    ds = load("cifar100", tmp_path)
    assert ds.x.shape == (5, 3, 32, 32) and ds.num_classes == 100
    assert ds.y.tolist() == [99] * 3 + [98] * 2
    assert ds.meta["coarse"].dtype == np.int64 and ds.meta["coarse"].tolist() == [19] * 3 + [18] * 2
    coarse = load("cifar100", tmp_path, labels="coarse")
    assert coarse.num_classes == 20 and coarse.y.tolist() == [19] * 3 + [18] * 2
    assert dataset_info({"name": "cifar100", "labels": "coarse", "max_samples": None}).num_classes == 20


# --- MNIST and EMNIST -------------------------------------------------------------------------

def test_mnist_files_plain_and_gzipped(tmp_path):
    img = np.random.default_rng(0).integers(0, 256, (5, 28, 28))
    write_idx_pair(tmp_path, "train", img[:3], np.array([0, 1, 2]), gz=True)
    write_idx_pair(tmp_path, "t10k", img[3:], np.array([9, 8]), gz=False)
    ds = load("mnist_files", tmp_path)
    assert ds.x.shape == (5, 1, 28, 28) and ds.y.tolist() == [0, 1, 2, 9, 8]
    np.testing.assert_allclose(ds.x[:, 0], img / np.float32(255), rtol=1e-6)


def test_idx_malformed_file_is_named(tmp_path):
    img = np.zeros((2, 28, 28))
    write_idx_pair(tmp_path, "train", img, np.array([0, 1]), gz=False)
    write_idx_pair(tmp_path, "t10k", img, np.array([0, 1]), gz=False)
    bad = tmp_path / "t10k-labels-idx1-ubyte"
    bad.write_bytes(bytes([0, 0, 8, 3]) + bad.read_bytes()[4:])     # an image magic on labels
    with pytest.raises(ConfigError, match="t10k-labels-idx1-ubyte.*magic 0x00000803") as e:
        load("mnist_files", tmp_path)
    assert e.value.field == "data.root"
    write_idx_pair(tmp_path, "t10k", img, np.array([0, 1]), gz=False)
    images = tmp_path / "train-images-idx3-ubyte"
    images.write_bytes(images.read_bytes()[:-1])                    # truncated
    with pytest.raises(ConfigError, match="train-images-idx3-ubyte: 1567 data bytes"):
        load("mnist_files", tmp_path)


@pytest.mark.parametrize("gz", [False, True])
def test_emnist_letters_transposed_and_shifted(tmp_path, gz):
    img = np.zeros((3, 28, 28), np.uint8)
    img[:, 0, 5] = 255                            # stored: row 0, column 5
    write_idx_pair(tmp_path / "gzip", "emnist-letters-train", img[:2], np.array([1, 26]), gz)
    write_idx_pair(tmp_path / "gzip", "emnist-letters-test", img[2:], np.array([13]), gz)
    ds = load("emnist", tmp_path, split="letters")
    assert ds.num_classes == 26 and ds.y.tolist() == [0, 25, 12]
    assert ds.x[0, 0, 5, 0] == 1.0 and ds.x[0, 0, 0, 5] == 0.0     # upright: row 5, column 0


def test_emnist_classes_per_split_without_loading():
    expected = {"byclass": 62, "bymerge": 47, "balanced": 47, "letters": 26, "digits": 10, "mnist": 10}
    for split, classes in expected.items():
        info = dataset_info({"name": "emnist", "split": split, "max_samples": None})
        assert info.num_classes == classes and info.image


def test_emnist_labels_out_of_range(tmp_path):
    img = np.zeros((2, 28, 28))
    write_idx_pair(tmp_path, "emnist-digits-train", img, np.array([0, 10]), False)
    write_idx_pair(tmp_path, "emnist-digits-test", img, np.array([0, 1]), False)
    with pytest.raises(ConfigError, match=r"labels in \[0, 10\], expected 0..9"):
        load("emnist", tmp_path, split="digits")


# --- LEAF -------------------------------------------------------------------------------------

def test_femnist_leaf_json(tmp_path):
    write_femnist(tmp_path / "data")
    ds = load("femnist", tmp_path)
    assert ds.x.shape == (12, 1, 28, 28) and ds.num_classes == 62
    assert ds.y.tolist() == [5] * 3 + [1] * 5 + [2] + [61] * 3
    np.testing.assert_allclose(ds.x[0], 5 / 62, rtol=1e-6)         # values kept as given
    assert ds.meta["writer"].dtype == np.int64
    assert ds.meta["writer"].tolist() == [1] * 3 + [0] * 5 + [0] + [2] * 3   # w1, w2, w3 sorted


def test_shakespeare_tokens_and_unknown_characters(tmp_path):
    text = "To be, or not to be: that is the question.\n" * 2
    xs = [text[i:i + 80] for i in range(3)]
    write_leaf(tmp_path, "train", {"HAMLET": (xs[:2], [text[80], "*"]),   # '*': not in LEAF's
                                   "LEAR": ([xs[1][:79] + "*"], [text[82]])})   # vocabulary
    write_leaf(tmp_path, "test", {"AROS": ([xs[2]], [text[82]])})
    ds = load("shakespeare", tmp_path)
    assert ds.x.shape == (2, 80) and ds.x.dtype == np.float32 and ds.num_classes == 80
    assert ds.input_shape == (80,) and dataset_info({"name": "shakespeare",
                                                     "max_samples": None}).num_classes == 80
    assert ds.x[0].astype(int).tolist() == [LEAF_LETTERS.find(c) for c in xs[0]]
    assert ds.x.max() < 80 and ds.x.min() >= 0
    assert ds.y.tolist() == [LEAF_LETTERS.find(text[80]), LEAF_LETTERS.find(text[82])]
    assert ds.meta["writer"].tolist() == [1, 0]          # AROS, HAMLET, LEAR; '*' samples dropped


def test_leaf_malformed_json(tmp_path):
    write_femnist(tmp_path)
    (tmp_path / "test" / "broken.json").write_text(json.dumps({"users": ["a"], "user_data": {}}))
    with pytest.raises(ConfigError, match="broken.json: not LEAF's") as e:
        load("femnist", tmp_path)
    assert e.value.field == "data.root"


# --- CINIC-10 ---------------------------------------------------------------------------------

def cinic_folders(root: Path) -> Path:
    for split in ("train", "valid", "test"):
        for c in ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
                  "truck"):
            (root / split / c).mkdir(parents=True)
    return root


def test_cinic10_png_folders_with_greyscale(tmp_path):
    root = cinic_folders(tmp_path / "ok")
    rgb = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    Image.fromarray(rgb).save(root / "train" / "bird" / "a.png")
    Image.fromarray(np.full((32, 32), 100, np.uint8), mode="L").save(root / "test" / "truck" / "g.png")
    ds = load("cinic10", root)
    assert ds.x.shape == (2, 3, 32, 32) and ds.y.tolist() == [2, 9]
    np.testing.assert_allclose(ds.x[0], rgb.transpose(2, 0, 1) / np.float32(255), rtol=1e-6)
    np.testing.assert_allclose(ds.x[1], 100 / 255, rtol=1e-6)
    bad = cinic_folders(tmp_path / "bad")
    Image.fromarray(rgb[:16]).save(bad / "valid" / "cat" / "small.png")
    with pytest.raises(ConfigError, match="small.png: 16x32 pixels"):
        load("cinic10", bad)


# --- data.root errors and validation ----------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("cifar10", "cifar-10-batches-py/data_batch_1..5 and test_batch"),
    ("cifar100", "cifar-100-python/train and test"),
    ("mnist_files", "train-images-idx3-ubyte"),
    ("emnist", "emnist-balanced-train-images-idx3-ubyte"),
    ("femnist", "train/\\*.json and test/\\*.json"),
    ("shakespeare", "train/\\*.json"),
    ("cinic10", "train/, valid/ and test/"),
])
def test_missing_root_says_what_was_expected(tmp_path, name, expected):
    for root in (None, tmp_path / "nowhere", tmp_path):
        with pytest.raises(ConfigError, match=expected) as e:
            load(name, root)
        assert e.value.field == "data.root"
    with pytest.raises(ConfigError, match="data.root is null"):
        load(name, None)


def test_wrong_cifar_folder(tmp_path):
    write_cifar10(tmp_path)
    (tmp_path / "cifar-10-batches-py" / "data_batch_3").unlink()
    with pytest.raises(ConfigError, match="missing in .*cifar-10-batches-py or .*: data_batch_3"):
        load("cifar10", tmp_path)
    write_pickle(tmp_path / "cifar-10-batches-py" / "data_batch_3", {b"data": np.zeros((2, 5))})
    with pytest.raises(ConfigError, match="data_batch_3: not a dict with keys"):
        load("cifar10", tmp_path)


def test_validation_does_not_need_the_files(tmp_path):
    out = validate_data({"dataset": "cifar10", "root": str(tmp_path / "absent"),
                         "augment": {"crop_padding": 4, "flip": True}}, 4)
    assert out["root"] == str(tmp_path / "absent")
    assert out["augment"] == {"crop_padding": 4, "padding_mode": "constant", "flip": True}
    assert validate_data({"dataset": "digits"}, 2)["root"] is None
    with pytest.raises(ConfigError, match="data.root is null"):
        build_client_data({"dataset": "cifar10"}, 2, rng())


def test_netsim_list_shows_the_file_datasets(capsys):
    assert main(["list", "datasets"]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    assert {"cifar10", "cifar100", "mnist_files", "emnist", "femnist", "shakespeare",
            "cinic10"} <= listed


# --- natural partition ------------------------------------------------------------------------

def test_natural_partition_one_client_per_writer(tmp_path):
    write_femnist(tmp_path)
    ds = load("femnist", tmp_path)
    part = make_partition({"name": "natural", "choose": "largest"}, ds, 2, rng())
    assert [sorted(set(ds.meta["writer"][i])) for i in part.indices] == [[0], [1]]
    assert [len(i) for i in part.indices] == [6, 3]
    every = make_partition("natural", ds, 3, rng())
    assert sorted(np.concatenate(every.indices).tolist()) == list(range(len(ds)))
    picks = {tuple(len(i) for i in make_partition("natural", ds, 1, rng(s)).indices)
             for s in range(20)}
    assert picks == {(6,), (3,)}                                   # a random writer each time
    with pytest.raises(ConfigError, match="at most 3 clients, one per writer") as e:
        make_partition("natural", ds, 4, rng())
    assert e.value.field == "clients"
    with pytest.raises(ConfigError, match="with writers: femnist, shakespeare") as e:
        make_partition("natural", load_dataset("digits", rng()), 2, rng())
    assert e.value.field == "data.partition.name"


# --- whole runs -------------------------------------------------------------------------------

def tiny_run(tmp_path: Path, data: dict, model: dict) -> dict:
    scenario = Scenario({
        "name": "files", "seed": 0, "clients": 2, "data": data, "model": model,
        "network": {"topology": "complete"}, "train": {"batch_size": 4, "local_steps": 1},
        "schedule": {"rounds": 2, "eval_every": 1}, "algorithms": ["local", "fedavg"],
        "outputs": {"figures": False, "progress": False}})
    res = run(scenario, out=tmp_path / "out", quiet=True)
    return json.loads((res.dir / "summary.json").read_text())


def test_run_on_cifar10_files(tmp_path):
    write_cifar10(tmp_path / "cifar", per_file=4)
    summary = tiny_run(tmp_path, {"dataset": "cifar10", "root": str(tmp_path / "cifar"),
                                  "augment": {"crop_padding": 4, "flip": True}},
                       {"name": "mlp", "hidden": [8]})
    assert 0.0 <= summary["algorithms"]["fedavg"]["mean_accuracy"] <= 1.0


def test_run_on_femnist_natural(tmp_path):
    write_femnist(tmp_path / "leaf", per_user=6)
    summary = tiny_run(tmp_path, {"dataset": "femnist", "root": str(tmp_path / "leaf"),
                                  "partition": {"name": "natural", "choose": "largest"}},
                       {"name": "femnist_cnn", "hidden": 16})
    assert 0.0 <= summary["algorithms"]["local"]["mean_accuracy"] <= 1.0


@pytest.mark.parametrize("name, params, classes, shape", [
    ("cifar10", {}, 10, (3, 32, 32)), ("cifar100", {"labels": "fine"}, 100, (3, 32, 32)),
    ("mnist_files", {}, 10, (1, 28, 28)), ("emnist", {"split": "letters"}, 26, (1, 28, 28)),
    ("femnist", {}, 62, (1, 28, 28)), ("shakespeare", {}, 80, (80,)),
    ("cinic10", {}, 10, (3, 32, 32))])
def test_standins_load_in_their_format(tmp_path, name, params, classes, shape):
    root = write_standin(name, tmp_path, samples_per_class=3, writers=4,
                         split=params.get("split", "balanced"))
    ds = load(name, root, **params)
    assert ds.num_classes == classes and ds.input_shape == shape
    if name in ("femnist", "shakespeare"):
        assert sorted(set(ds.meta["writer"].tolist())) == [0, 1, 2, 3]
        assert len(ds) == 4 * (3 + 2)
    else:
        assert sorted(set(ds.y.tolist())) == list(range(classes))   # every class present
    if name == "cifar100":
        np.testing.assert_array_equal(ds.meta["coarse"], ds.y // 5)


def test_cli_standin_writes_a_loadable_folder(tmp_path, capsys):
    assert main(["standin", "femnist", str(tmp_path / "leaf"), "--writers", "3",
                 "--samples", "2"]) == 0
    assert "femnist stand-in written" in capsys.readouterr().out
    ds = load("femnist", tmp_path / "leaf")
    assert len(ds) == 3 * (2 + 2) and ds.meta["writer"].max() == 2
    assert main(["standin", "imagenet", str(tmp_path / "x")]) == 2
    assert "allowed: cifar10, cifar100" in capsys.readouterr().err

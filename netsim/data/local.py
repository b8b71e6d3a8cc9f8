"""Datasets read from the user's own copies under ``data.root`` (netsim never downloads).

Every loader keeps all samples of the public train and test files, merged into one pool: netsim
splits each client's samples itself (``data.val_fraction``, ``data.test_fraction``). The
``max_samples`` field keeps a uniformly random subset of that many samples, drawn from the
``data`` stream (e.g. PDBO's 10% of EMNIST balanced: ``max_samples: 13160``). Images come out
float32 ``[n, C, H, W]`` in [0, 1]; files are read once per process (the last dataset read stays
cached). A null ``data.root``, a missing folder or file, or a malformed file raises
``ConfigError("data.root", ...)`` saying what was expected where, before any training.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable

import numpy as np

from netsim.data.datasets import DatasetInfo, RawDataset, dataset
from netsim.data.files import DataRoot, read_cifar_batch, read_idx_pair, read_leaf
from netsim.schema import Field

Samples = tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]   # x, y, meta

_MAX_SAMPLES = Field("int", None, "keep a random subset of this many samples (train and test "
                     "files merged); null = all", lo=1, nullable=True)

CIFAR10 = ("a folder with cifar-10-batches-py/data_batch_1..5 and test_batch (the python version "
           "of CIFAR-10)")
CIFAR100 = "a folder with cifar-100-python/train and test (the python version of CIFAR-100)"
MNIST = ("a folder with MNIST's train-images-idx3-ubyte, train-labels-idx1-ubyte, "
         "t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (each may be .gz)")
EMNIST = ("a folder (or its gzip/ subfolder) with EMNIST's emnist-{split}-train-images-idx3-ubyte, "
          "emnist-{split}-train-labels-idx1-ubyte, emnist-{split}-test-images-idx3-ubyte and "
          "emnist-{split}-test-labels-idx1-ubyte (each may be .gz)")
LEAF = "LEAF's {name} JSON: a folder with train/*.json and test/*.json (or data/train, data/test)"
CINIC10 = ("a folder with CINIC-10's train/, valid/ and test/, each holding the 10 class folders "
           "(airplane ... truck) of 32x32 PNGs")

EMNIST_CLASSES = {"byclass": 62, "bymerge": 47, "balanced": 47, "letters": 26, "digits": 10,
                  "mnist": 10}
CINIC10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
                   "truck")
# LEAF's ALL_LETTERS: the Shakespeare vocabulary, token id = position (LEAF's letter_to_index)
LEAF_LETTERS = ("\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]"
                "abcdefghijklmnopqrstuvwxyz}")
SEQ_LEN = 80


def _image_info(classes: int) -> Callable[[dict], DatasetInfo]:
    return lambda spec: DatasetInfo("classification", classes, image=True)


@lru_cache(maxsize=1)
def _read(reader: Callable[..., Samples], root: DataRoot, *args) -> Samples:
    """``reader(root, *args)`` once per process for the same arguments; arrays read-only."""
    samples = reader(root, *args)
    for a in (samples[0], samples[1], *samples[2].values()):
        a.flags.writeable = False
    return samples


def _finish(name: str, samples: Samples, num_classes: int, root: DataRoot,
            rng: np.random.Generator, max_samples: int | None) -> RawDataset:
    """Check the labels, keep ``max_samples`` random samples, scale uint8 images to [0, 1]."""
    x, y, meta = samples
    if len(y) == 0:
        raise root.error("the files hold no samples")
    if y.min() < 0 or y.max() >= num_classes:
        raise root.error(f"labels in [{y.min()}, {y.max()}], expected 0..{num_classes - 1}")
    if max_samples is not None and max_samples < len(y):
        keep = np.sort(rng.choice(len(y), max_samples, replace=False))
        x, y, meta = x[keep], y[keep], {k: v[keep] for k, v in meta.items()}
    if x.dtype == np.uint8:
        x = x / np.float32(255)
    return RawDataset(x, y, num_classes, tuple(x.shape[1:]), "classification", name, meta=meta)


def _writers(users: list[str]) -> np.ndarray:
    """Writer index of every sample, users numbered in sorted order."""
    return np.unique(np.asarray(users), return_inverse=True)[1].astype(np.int64).reshape(-1)


# --- CIFAR ------------------------------------------------------------------------------------

def _read_cifar10(root: DataRoot) -> Samples:
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    batches = [read_cifar_batch(root, p, (b"labels",))
               for p in root.find(names, ("cifar-10-batches-py", ""))]
    return np.concatenate([x for x, _ in batches]), np.concatenate([y for _, (y,) in batches]), {}


def _read_cifar100(root: DataRoot) -> Samples:
    batches = [read_cifar_batch(root, p, (b"fine_labels", b"coarse_labels"))
               for p in root.find(["train", "test"], ("cifar-100-python", ""))]
    fine, coarse = (np.concatenate([labels[i] for _, labels in batches]) for i in (0, 1))
    return np.concatenate([x for x, _ in batches]), fine, {"coarse": coarse}


@dataset("cifar10", {"max_samples": _MAX_SAMPLES}, _image_info(10), files=True)
def cifar10(rng: np.random.Generator, root: str | None, max_samples: int | None) -> RawDataset:
    """CIFAR-10 from data.root (python version): 60,000 32x32 RGB images, 10 classes."""
    r = DataRoot(root, CIFAR10)
    return _finish("cifar10", _read(_read_cifar10, r), 10, r, rng, max_samples)


@dataset("cifar100", {
    "labels": Field("str", "fine", "fine (100 classes) or coarse (20 superclasses)",
                    choices=("fine", "coarse")),
    "max_samples": _MAX_SAMPLES,
}, lambda spec: DatasetInfo("classification", 100 if spec["labels"] == "fine" else 20, image=True),
    files=True)
def cifar100(rng: np.random.Generator, root: str | None, labels: str,
             max_samples: int | None) -> RawDataset:
    """CIFAR-100 from data.root (python version): 60,000 32x32 RGB images; meta["coarse"] = superclass."""
    r = DataRoot(root, CIFAR100)
    x, fine, meta = _read(_read_cifar100, r)
    y = fine if labels == "fine" else meta["coarse"]
    return _finish("cifar100", (x, y, meta), 100 if labels == "fine" else 20, r, rng, max_samples)


# --- MNIST and EMNIST (IDX files) -------------------------------------------------------------

def _read_idx(root: DataRoot, prefixes: tuple[str, ...], subdirs: tuple[str, ...]) -> Samples:
    """Images and labels of every ``<prefix>-images-idx3-ubyte`` / ``<prefix>-labels-idx1-ubyte``."""
    names = [f"{p}-{kind}" for p in prefixes for kind in ("images-idx3-ubyte", "labels-idx1-ubyte")]
    paths = root.find(names, subdirs, gz=True)
    parts = [read_idx_pair(root, paths[i], paths[i + 1]) for i in range(0, len(paths), 2)]
    if len({x.shape[1:] for x, _ in parts}) > 1:
        sizes = [list(x.shape[2:]) for x, _ in parts]
        raise root.error(f"image sizes differ between files: {sizes}")
    return np.concatenate([x for x, _ in parts]), np.concatenate([y for _, y in parts]), {}


def _read_emnist(root: DataRoot, split: str) -> Samples:
    """EMNIST stores images transposed (column-major): swap H and W; letters' labels 1..26 -> 0..25."""
    x, y, meta = _read_idx(root, (f"emnist-{split}-train", f"emnist-{split}-test"),
                           ("", "gzip", "EMNIST/raw"))
    return x.transpose(0, 1, 3, 2), y - 1 if split == "letters" else y, meta


@dataset("mnist_files", {"max_samples": _MAX_SAMPLES}, _image_info(10), files=True)
def mnist_files(rng: np.random.Generator, root: str | None, max_samples: int | None) -> RawDataset:
    """Full MNIST from data.root (IDX files, optionally gzipped): 70,000 28x28 images, 10 classes."""
    r = DataRoot(root, MNIST)
    return _finish("mnist_files", _read(_read_idx, r, ("train", "t10k"), ("", "MNIST/raw")), 10, r,
                   rng, max_samples)


@dataset("emnist", {
    "split": Field("str", "balanced", "EMNIST split (classes: byclass 62, bymerge 47, balanced 47, "
                   "letters 26, digits 10, mnist 10)", choices=tuple(EMNIST_CLASSES)),
    "max_samples": _MAX_SAMPLES,
}, lambda spec: DatasetInfo("classification", EMNIST_CLASSES[spec["split"]], image=True),
    files=True)
def emnist(rng: np.random.Generator, root: str | None, split: str,
           max_samples: int | None) -> RawDataset:
    """EMNIST from data.root (IDX files, optionally gzipped): 28x28 images, upright."""
    r = DataRoot(root, EMNIST.format(split=split))
    return _finish("emnist", _read(_read_emnist, r, split), EMNIST_CLASSES[split], r, rng,
                   max_samples)


# --- LEAF (JSON) ------------------------------------------------------------------------------

def _read_femnist(root: DataRoot) -> Samples:
    users, xs, ys = read_leaf(root)
    try:
        x, y = np.asarray(xs, np.float32), np.asarray(ys, np.int64)
    except (TypeError, ValueError) as exc:
        raise root.error(f"FEMNIST samples must be 784 floats and an int label ({exc})") from None
    if x.ndim != 2 or x.shape[1] != 28 * 28 or y.ndim != 1:
        raise root.error(f"FEMNIST samples must be 784 floats and an int label, got x of shape "
                         f"{list(x.shape)}")
    return x.reshape(-1, 1, 28, 28), y, {"writer": _writers(users)}


def _read_shakespeare(root: DataRoot) -> Samples:
    """Token ids in LEAF's ALL_LETTERS (LEAF's ``letter_to_index``); a sample with a character
    outside it (LEAF's index -1) in x or y is dropped, so every id is a class of the next-character
    task and an embedding of ``len(LEAF_LETTERS)`` symbols covers the inputs."""
    users, xs, ys = read_leaf(root)
    if not all(isinstance(s, str) and len(s) == SEQ_LEN for s in xs) \
            or not all(isinstance(c, str) and len(c) == 1 for c in ys):
        raise root.error(f"Shakespeare samples must be strings of {SEQ_LEN} characters and "
                         "one next character")
    codes = np.frombuffer(("".join(xs) + "".join(ys)).encode("utf-32-le"), np.uint32)
    table = np.full(max(int(codes.max(initial=0)), 127) + 1, -1, np.int64)
    table[[ord(c) for c in LEAF_LETTERS]] = np.arange(len(LEAF_LETTERS))
    tokens = table[codes]
    x, y = tokens[:len(xs) * SEQ_LEN].reshape(-1, SEQ_LEN), tokens[len(xs) * SEQ_LEN:]
    known = (x >= 0).all(axis=1) & (y >= 0)
    return x[known].astype(np.float32), y[known], {"writer": _writers(users)[known]}


@dataset("femnist", {"max_samples": _MAX_SAMPLES}, _image_info(62), files=True)
def femnist(rng: np.random.Generator, root: str | None, max_samples: int | None) -> RawDataset:
    """LEAF FEMNIST from data.root (JSON): 28x28 images as given (1 = white), 62 classes, writers."""
    r = DataRoot(root, LEAF.format(name="FEMNIST"))
    return _finish("femnist", _read(_read_femnist, r), 62, r, rng, max_samples)


@dataset("shakespeare", {"max_samples": _MAX_SAMPLES},
         lambda spec: DatasetInfo("classification", len(LEAF_LETTERS)), files=True)
def shakespeare(rng: np.random.Generator, root: str | None, max_samples: int | None) -> RawDataset:
    """LEAF Shakespeare from data.root (JSON): 80-character token ids -> next character (80 classes).

    x holds float32 token ids ``[n, 80]`` in [0, 80), y the next character's id (samples with a
    character outside LEAF's vocabulary are dropped); meta["writer"] = the speaking role (LEAF's
    user).
    """
    r = DataRoot(root, LEAF.format(name="Shakespeare"))
    return _finish("shakespeare", _read(_read_shakespeare, r), len(LEAF_LETTERS), r, rng,
                   max_samples)


# --- CINIC-10 (PNG folders) -------------------------------------------------------------------

def _read_cinic10(root: DataRoot) -> Samples:
    folders = root.find([f"{split}/{c}" for split in ("train", "valid", "test")
                         for c in CINIC10_CLASSES], ("", "CINIC-10"))
    xs, ys = [], []
    for i, folder in enumerate(folders):
        images = [root.png(p, (32, 32)) for p in sorted(folder.glob("*.png"))]
        xs += images
        ys += [i % len(CINIC10_CLASSES)] * len(images)
    x = np.stack(xs) if xs else np.zeros((0, 3, 32, 32), np.uint8)
    return x, np.asarray(ys, np.int64), {}


@dataset("cinic10", {"max_samples": _MAX_SAMPLES}, _image_info(10), files=True)
def cinic10(rng: np.random.Generator, root: str | None, max_samples: int | None) -> RawDataset:
    """CINIC-10 from data.root (PNG folders): 270,000 32x32 RGB images, 10 classes (slow first read)."""
    r = DataRoot(root, CINIC10)
    return _finish("cinic10", _read(_read_cinic10, r), 10, r, rng, max_samples)

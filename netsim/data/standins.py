"""Tiny random stand-ins of the local-file datasets, written in each dataset's exact public format.

They let a paper-scale scenario run end to end where the real data is absent (the test suite does
this for every file in ``scenarios/paper/``), and ``benchmarks/paper_cost.py`` times a training
step with them. Pixels are random: a stand-in checks formats, shapes and plumbing, not accuracy.

    from netsim.data.standins import write_standin
    root = write_standin("cifar100", "/tmp/c100", samples_per_class=3)
    # then: netsim run scenarios/paper/cobo_cross_silo.yaml --set data.root=/tmp/c100 ...
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import pickle
from pathlib import Path
from typing import Callable

import numpy as np
import yaml

from netsim.data.local import CINIC10_CLASSES, EMNIST_CLASSES, LEAF_LETTERS, SEQ_LEN
from netsim.errors import ConfigError

#: written into a stand-in's root: what wrote it, so a too-small stand-in can be named as such
MARKER = "netsim_standin.yaml"
#: the largest multiple of a stand-in's size :func:`standin_hint` tries
MAX_GROWTH = 2 ** 12


def write_pickle(path: Path, obj: dict) -> None:
    """A python pickle, as CIFAR's batch files are."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(obj))


def write_idx(path: Path, arr: np.ndarray, gz: bool = False) -> Path:
    """An IDX file of unsigned bytes (magic 0x0000 08 ndim, big-endian uint32 dims), optionally
    gzipped (``.gz`` appended); returns its path."""
    header = bytes([0, 0, 8, arr.ndim]) + np.asarray(arr.shape, ">u4").tobytes()
    raw = header + arr.astype(np.uint8).tobytes()
    path = path.with_name(path.name + ".gz") if gz else path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


def write_idx_pair(root: Path, prefix: str, images: np.ndarray, labels: np.ndarray,
                   gz: bool = False) -> None:
    """``<prefix>-images-idx3-ubyte`` and ``<prefix>-labels-idx1-ubyte`` under ``root``."""
    write_idx(root / f"{prefix}-images-idx3-ubyte", images, gz)
    write_idx(root / f"{prefix}-labels-idx1-ubyte", labels, gz)


def write_leaf(root: Path, split: str, users: dict[str, tuple[list, list]]) -> None:
    """One LEAF JSON file ``root/split/...json``: users, num_samples and user_data {x, y}."""
    (root / split).mkdir(parents=True, exist_ok=True)
    doc = {"users": list(users), "num_samples": [len(x) for x, _ in users.values()],
           "user_data": {u: {"x": x, "y": y} for u, (x, y) in users.items()}}
    (root / split / f"all_data_0_niid_0_keep_0_{split}_9.json").write_text(json.dumps(doc))


def _labels(classes: int, per_class: int, rng: np.random.Generator) -> np.ndarray:
    """Every class ``per_class`` times, shuffled."""
    return rng.permutation(np.repeat(np.arange(classes), per_class))


def _cifar(root: Path, per_class: int, rng: np.random.Generator, fine: bool) -> None:
    classes = 100 if fine else 10
    y = _labels(classes, per_class, rng)
    x = rng.integers(0, 256, (len(y), 3072), dtype=np.uint8)
    if fine:                                      # coarse label of fine label f: f // 5
        for name, part in (("train", slice(None, len(y) // 2)), ("test", slice(len(y) // 2, None))):
            write_pickle(root / "cifar-100-python" / name,
                         {b"data": x[part], b"fine_labels": y[part].tolist(),
                          b"coarse_labels": (y[part] // 5).tolist()})
        return
    names = [f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]
    for name, rows in zip(names, np.array_split(np.arange(len(y)), len(names))):
        write_pickle(root / "cifar-10-batches-py" / name,
                     {b"data": x[rows], b"labels": y[rows].tolist()})


def _idx_images(root: Path, prefixes: tuple[str, str], classes: int, per_class: int,
                rng: np.random.Generator, offset: int = 0) -> None:
    y = _labels(classes, per_class, rng)
    x = rng.integers(0, 256, (len(y), 28, 28), dtype=np.uint8)
    half = len(y) // 2
    write_idx_pair(root, prefixes[0], x[:half], y[:half] + offset)
    write_idx_pair(root, prefixes[1], x[half:], y[half:] + offset)


def _leaf(root: Path, writers: int, per_writer: int, rng: np.random.Generator,
          sample: Callable[[np.random.Generator], tuple]) -> None:
    """``writers`` users, each with ``per_writer`` train and 2 test samples from ``sample``."""
    for split, count in (("train", per_writer), ("test", 2)):
        users = {}
        for w in range(writers):
            xs, ys = zip(*(sample(rng) for _ in range(count)))
            users[f"writer_{w:03d}"] = (list(xs), list(ys))
        write_leaf(root, split, users)


def _femnist_sample(rng: np.random.Generator) -> tuple[list, int]:
    return rng.random(784).round(3).tolist(), int(rng.integers(62))


def _shakespeare_sample(rng: np.random.Generator) -> tuple[str, str]:
    ids = rng.integers(len(LEAF_LETTERS), size=SEQ_LEN + 1)
    text = "".join(LEAF_LETTERS[i] for i in ids)
    return text[:SEQ_LEN], text[SEQ_LEN]


def _cinic(root: Path, per_class: int, rng: np.random.Generator) -> None:
    from PIL import Image

    for split in ("train", "valid", "test"):
        for c in CINIC10_CLASSES:
            folder = root / split / c
            folder.mkdir(parents=True, exist_ok=True)
            for k in range(max(1, per_class // 3)):
                pixels = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(folder / f"{c}_{k}.png")


STANDINS = ("cifar10", "cifar100", "mnist_files", "emnist", "femnist", "shakespeare", "cinic10")
#: bytes of one sample while a stand-in is written (its array; LEAF's FEMNIST images as JSON
#: lists of Python floats; CINIC-10 writes one image at a time): a lower bound
SAMPLE_BYTES = {"cifar10": 3072, "cifar100": 3072, "mnist_files": 784, "emnist": 784,
                "femnist": 784 * 32, "shakespeare": SEQ_LEN + 1, "cinic10": 0}
_CLASSES = {"cifar10": 10, "cifar100": 100, "mnist_files": 10, "cinic10": 10}


def check_standin(dataset: str, samples_per_class: int, writers: int, split: str) -> None:
    """Refuse (ConfigError, named as ``netsim standin``'s options) an unknown dataset or EMNIST
    split, counts below 1, and a stand-in whose samples do not fit in the free memory."""
    from netsim.schema import Field
    from netsim.util.free_memory import require

    if dataset not in STANDINS:
        raise ConfigError("dataset", dataset, ", ".join(STANDINS))
    Field("str", choices=tuple(EMNIST_CLASSES)).check("--split", split)
    for key, value in (("--samples", samples_per_class), ("--writers", writers)):
        Field("int", lo=1).check(key, value)
    if dataset in ("femnist", "shakespeare"):
        samples = writers * (samples_per_class + 2)          # train samples and 2 test each
    else:
        classes = EMNIST_CLASSES[split] if dataset == "emnist" else _CLASSES[dataset]
        samples = classes * samples_per_class
    require(samples * SAMPLE_BYTES[dataset], "cpu", "--samples", samples_per_class,
            f"a {dataset} stand-in")


def write_standin(dataset: str, root: str | Path, samples_per_class: int = 4, writers: int = 8,
                  seed: int = 0, split: str = "balanced") -> Path:
    """Write a random stand-in of ``dataset`` under ``root`` in its public format; returns root.

    Image datasets get ``samples_per_class`` samples of every class (train and test files
    together; CINIC-10 a third of that per split); LEAF datasets get ``writers`` users with
    ``samples_per_class`` training samples each. ``split``: the EMNIST split to write. Checked
    first (:func:`check_standin`).
    """
    check_standin(dataset, samples_per_class, writers, split)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    if dataset in ("cifar10", "cifar100"):
        _cifar(root, samples_per_class, rng, fine=dataset == "cifar100")
    elif dataset == "mnist_files":
        _idx_images(root, ("train", "t10k"), 10, samples_per_class, rng)
    elif dataset == "emnist":
        _idx_images(root, (f"emnist-{split}-train", f"emnist-{split}-test"),
                    EMNIST_CLASSES[split], samples_per_class, rng,
                    offset=1 if split == "letters" else 0)
    elif dataset == "femnist":
        _leaf(root, writers, samples_per_class, rng, _femnist_sample)
    elif dataset == "shakespeare":
        _leaf(root, writers, samples_per_class, rng, _shakespeare_sample)
    else:
        _cinic(root, samples_per_class, rng)
    (root / MARKER).write_text(yaml.safe_dump({"dataset": dataset, "samples": samples_per_class,
                                               "writers": writers}))
    return root


def standin_hint(err: ConfigError, root: str | None, ds, partition: Callable) -> ConfigError:
    """``err`` (a partition that failed on ``ds``), saying so when ``ds`` is a stand-in read from
    ``root``: too small for the partition, and the ``--samples`` with which ``partition(bigger
    ds)`` succeeds (the stand-in's samples repeated 2, 4, ... times); ``err`` itself otherwise."""
    marker = Path(root) / MARKER if root else None
    if marker is None or not marker.is_file():
        return err
    info = yaml.safe_load(marker.read_text())
    what = (f"data.root is a netsim stand-in of {len(ds)} samples (--samples {info['samples']}), "
            "too small for this partition")
    for times in (2 ** k for k in range(1, MAX_GROWTH.bit_length())):
        idx = np.tile(np.arange(len(ds)), times)
        bigger = dataclasses.replace(ds, x=np.empty((len(idx), 0), np.float32), y=ds.y[idx],
                                     meta={k: v[idx] for k, v in ds.meta.items()})
        try:
            partition(bigger)
        except ConfigError:
            continue
        return ConfigError(err.field, err.value, err.allowed, what + f": write it with `netsim "
                           f"standin {info['dataset']} {root} --samples {info['samples'] * times}`")
    return ConfigError(err.field, err.value, err.allowed, what + ": write a larger one (LEAF "
                       "datasets: more --writers)")

"""Per-client data on the device: the ``data`` section's schema, its validation and ``ClientData``.

Pipeline (:func:`build_client_data`), every draw from the ``data`` stream: load the dataset (from
``data.root`` for the local-file datasets) -> partition it -> (cluster-structured synthetic tasks)
draw targets per cluster -> split each client's own samples into train/val/test (so val/test
follow the client's distribution) -> apply the client's label map and feature shift -> pad into
``[N, max_n, ...]`` tensors. Training mini-batches are augmented on the fly when ``data.augment``
asks for it (``netsim.data.augment``).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from netsim.data.augment import AUGMENT_FIELDS, augment_images, augments
from netsim.data.datasets import DATASETS, RawDataset, dataset_info, draw_range, load_dataset
from netsim.data.partitions import PARTITIONS, Partition, check_partition, make_partition
from netsim.errors import ConfigError
from netsim.schema import Field, check_section

SPLITS = ("train", "val", "test")

DATA_FIELDS = {
    "dataset": Field("any", doc="a dataset name or {name: ..., params} (netsim list datasets)"),
    "root": Field("str", None, "folder with your copy of a local-file dataset's files (netsim "
                  "never downloads); checked when the data is built, not by validation",
                  nullable=True),
    "partition": Field("any", "iid", "a partition name or {name: ..., params} "
                       "(netsim list partitions)"),
    "val_fraction": Field("float", 0.15, "share of each client's samples for validation",
                          lo=0.0, hi=1.0),
    "test_fraction": Field("float", 0.25, "share of each client's samples for testing",
                           lo=0.0, hi=1.0),
    "max_samples_per_client": Field("int", None, "cap on a client's samples before the split; "
                                    "null = no cap", lo=1, nullable=True),
    "augment": Field("dict", {}, "training-batch image augmentation: {crop_padding: int, "
                     "flip: bool}; {} = none"),
}


def validate_data(section: dict | None, n_clients: int) -> dict:
    """Validate the ``data`` section for ``n_clients`` clients; return it resolved, defaults filled."""
    out = check_section("data", section, DATA_FIELDS)
    for key in ("val_fraction", "test_fraction"):
        if out[key] >= 1.0:
            raise ConfigError(f"data.{key}", out[key], "a float in [0, 1)")
    if out["val_fraction"] + out["test_fraction"] >= 1.0:
        raise ConfigError("data.test_fraction", out["test_fraction"],
                          f"a float in [0, {1 - out['val_fraction']:g}) so that "
                          "val_fraction + test_fraction < 1")
    cap, share = out["max_samples_per_client"], out["test_fraction"]
    if cap is not None and share > 0 and int(share * cap) == 0:
        least = math.ceil(1 / share)
        least += int(share * least) == 0                      # 1 / share rounded down
        raise ConfigError("data.max_samples_per_client", cap, f"at least {least}, so that "
                          f"test_fraction {share:g} leaves a client a test sample")
    if isinstance(n_clients, bool) or not isinstance(n_clients, int) or n_clients < 1:
        raise ConfigError("clients", n_clients, "an int >= 1")
    out["dataset"] = DATASETS.resolve(out["dataset"], "data.dataset")
    info = dataset_info(out["dataset"])
    out["partition"] = check_partition(PARTITIONS.resolve(out["partition"], "data.partition"),
                                       n_clients, info)
    out["augment"] = check_section("data.augment", out["augment"], AUGMENT_FIELDS)
    if augments(out["augment"]) and not info.image:
        raise ConfigError("data.augment", out["augment"],
                          f"{{}} for dataset {out['dataset']['name']} (augmentation needs image "
                          "inputs [C, H, W])")
    return out


def check_test_samples(data: ClientData, test_fraction: float) -> None:
    """Refuse (ConfigError) clients' data where no client has a test sample: nothing could be
    scored; warn (one line) where some have none: they are left out of the test means."""
    n_test = data.n["test"].cpu().numpy()
    if not n_test.any():
        raise ConfigError("data.test_fraction", test_fraction, "a share that leaves some client "
                          "a test sample", "no client has one: give more samples per client "
                          "or a larger test_fraction")
    empty = int((n_test == 0).sum())
    if empty:
        warnings.warn(f"{empty} of {len(n_test)} clients have no test sample (data.test_fraction "
                      f"{test_fraction:g} of too few samples): they are left out of the test "
                      "means", RuntimeWarning, stacklevel=2)


def client_splits(indices: list[np.ndarray], val_fraction: float, test_fraction: float,
                  max_samples: int | None, rng: np.random.Generator) -> dict[str, list[np.ndarray]]:
    """Shuffle each client's samples, cap them at ``max_samples``, and cut them into
    ``floor(val_fraction n)`` validation and ``floor(test_fraction n)`` test samples, the rest for
    training (with val_fraction + test_fraction < 1, every non-empty client keeps a training
    sample). Raises ConfigError naming the first client without samples."""
    out: dict[str, list[np.ndarray]] = {s: [] for s in SPLITS}
    for i, idx in enumerate(indices):
        idx = rng.permutation(idx)[:max_samples]
        n_val, n_test = int(val_fraction * len(idx)), int(test_fraction * len(idx))
        if len(idx) - n_val - n_test < 1:
            raise ConfigError("data.partition", f"client {i} with {len(idx)} samples",
                              "a partition giving every client at least one training sample; "
                              "use fewer clients, more samples or smaller val/test fractions")
        val, test, train = np.split(idx, [n_val, n_val + n_test])
        for split, part in zip(SPLITS, (train, val, test)):
            out[split].append(part)
    return out


def client_arrays(ds: RawDataset, part: Partition,
                  indices: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each client's inputs and targets for its sample ``indices``, with the partition's feature
    shift (``x * scale + shift``) and label map (``label_map[i, y]``) applied."""
    xs, ys = [], []
    for i, idx in enumerate(indices):
        x, y = ds.x[idx], ds.y[idx]
        if part.feature_shift is not None:
            scale, shift = part.feature_shift[i]
            x = (x * scale + shift).astype(np.float32)
        if part.label_map is not None:
            y = part.label_map[i][y]
        xs.append(x)
        ys.append(y)
    return xs, ys


def _pad(arrays: list[np.ndarray], tail: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    out = np.zeros((len(arrays), max([1] + [len(a) for a in arrays]), *tail), dtype)
    for i, a in enumerate(arrays):
        out[i, :len(a)] = a
    return out


@dataclass
class ClientData:
    """All clients' data, pre-tensorised on the device and zero-padded to ``[N, max_n, ...]``.

    ``x[split]``: float32 ``[N, max_n, *input_shape]``; ``y[split]``: int64 ``[N, max_n]``
    (classification) or float32 ``[N, max_n, k]`` (regression); ``n[split]``: true sizes int64 [N];
    ``cluster``: ground truth (-1 if none); ``loss_scale``: per-client loss weight float32 [N];
    ``augment``: a resolved ``data.augment`` spec applied to training batches, None = none.
    """

    x: dict[str, torch.Tensor]
    y: dict[str, torch.Tensor]
    n: dict[str, torch.Tensor]
    cluster: np.ndarray
    group: list[str]
    num_classes: int
    input_shape: tuple[int, ...]
    task: str
    loss_scale: torch.Tensor
    augment: dict | None = None

    @classmethod
    def from_clients(cls, x: dict[str, list[np.ndarray]], y: dict[str, list[np.ndarray]], *,
                     num_classes: int, input_shape: tuple[int, ...], task: str,
                     cluster: np.ndarray | None = None, group: list[str] | None = None,
                     loss_scale: np.ndarray | None = None, augment: dict | None = None,
                     device: str | torch.device = "cpu") -> ClientData:
        """Pad per-split lists of per-client arrays (``x[split][i]``, ``y[split][i]``) into tensors."""
        n_clients = len(x["train"])
        regression = task == "regression"
        tensors = {}
        for name, data, tail, dtype in (
                ("x", x, tuple(input_shape), np.float32),
                ("y", y, (num_classes,) if regression else (), np.float32 if regression else np.int64)):
            tensors[name] = {s: torch.from_numpy(_pad(data[s], tail, dtype)).to(device) for s in SPLITS}
        return cls(
            x=tensors["x"], y=tensors["y"],
            n={s: torch.tensor([len(a) for a in x[s]], dtype=torch.int64, device=device)
               for s in SPLITS},
            cluster=np.full(n_clients, -1) if cluster is None else np.asarray(cluster),
            group=[""] * n_clients if group is None else list(group),
            num_classes=num_classes, input_shape=tuple(input_shape), task=task,
            loss_scale=torch.as_tensor(np.ones(n_clients) if loss_scale is None else loss_scale,
                                       dtype=torch.float32, device=device),
            augment=augment,
        )

    @property
    def n_clients(self) -> int:
        return len(self.cluster)

    @property
    def device(self) -> torch.device:
        return self.loss_scale.device

    def _rows(self, clients: torch.Tensor | None) -> torch.Tensor:
        if clients is None:
            return torch.arange(self.n_clients, device=self.device)
        return torch.as_tensor(clients, dtype=torch.int64, device=self.device)

    def sample_batch(self, split: str, batch_size: int, gen: torch.Generator,
                     clients: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``batch_size`` samples per client, uniform with replacement among its ``n[split]`` true
        rows, for all (or the listed) clients in one gather: ``x[M, B, ...]``, ``y[M, B, ...]``.

        A client whose split is empty gets its (zero) padding row. Training batches are augmented
        (``augment``), with further draws from ``gen``.
        """
        rows = self._rows(clients)
        # float64 so that floor(u * n) < n for every n (float32 u * n can round up to n)
        u = torch.rand(len(rows), batch_size, generator=gen, device=self.device, dtype=torch.float64)
        pick = (u * self.n[split][rows, None]).long()
        x, y = self.gather(split, rows, pick)
        if split == "train" and self.augment is not None:
            x = augment_images(x, gen, **self.augment)
        return x, y

    def gather(self, split: str, rows: torch.Tensor, pick: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Sample ``pick[m, b]`` of client ``rows[m]``: ``x[M, B, ...]``, ``y[M, B, ...]`` (the
        advanced index ``x[rows[:, None], pick]``, as one row gather of the flattened
        ``[N * max_n, ...]`` tensors: about 4x faster on the CPU)."""
        x, y = self.x[split], self.y[split]
        at = (rows[:, None] * x.shape[1] + pick).reshape(-1)
        return tuple(t.flatten(0, 1).index_select(0, at).unflatten(0, pick.shape) for t in (x, y))

    def full(self, split: str, clients: torch.Tensor | None = None
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every padded row of all (or the listed) clients: ``x``, ``y`` and ``mask[M, max_n]``
        (True on real samples)."""
        x, y, n = self.x[split], self.y[split], self.n[split]
        if clients is not None:
            rows = self._rows(clients)
            x, y, n = x[rows], y[rows], n[rows]
        mask = torch.arange(x.shape[1], device=self.device)[None, :] < n[:, None]
        return x, y, mask

    def class_counts(self, split: str) -> np.ndarray:
        """Samples per class ``[N, num_classes]`` (after the label maps); classification only."""
        if self.task != "classification":
            raise TypeError("class counts exist only for classification tasks")
        _, y, mask = self.full(split)
        y, mask = y.cpu().numpy(), mask.cpu().numpy()
        flat = (np.arange(self.n_clients)[:, None] * self.num_classes + y)[mask]
        return np.bincount(flat, minlength=self.n_clients * self.num_classes).reshape(
            self.n_clients, self.num_classes)


def build_client_data(cfg_data: dict, n_clients: int, rng: np.random.Generator,
                      device: str | torch.device = "cpu") -> ClientData:
    """Build every client's train/val/test data from the ``data`` section, all draws from ``rng``."""
    cfg = validate_data(cfg_data, n_clients)
    ds = load_dataset(cfg["dataset"], rng, root=cfg["root"])
    try:
        part = make_partition(cfg["partition"], ds, n_clients, rng)
    except ConfigError as err:                  # say so when a stand-in is too small
        from netsim.data.standins import standin_hint
        raise standin_hint(err, cfg["root"], ds, lambda big: make_partition(
            cfg["partition"], big, n_clients, np.random.default_rng(0))) from None
    if ds.cluster_targets is not None:
        sample_cluster = np.zeros(len(ds), np.int64)
        for idx, k in zip(part.indices, part.cluster):
            sample_cluster[idx] = max(int(k), 0)
        ds = ds.with_clusters(sample_cluster, rng)
    splits = client_splits(part.indices, cfg["val_fraction"], cfg["test_fraction"],
                           cfg["max_samples_per_client"], rng)
    arrays = {s: client_arrays(ds, part, splits[s]) for s in SPLITS}
    return ClientData.from_clients(
        {s: arrays[s][0] for s in SPLITS}, {s: arrays[s][1] for s in SPLITS},
        num_classes=ds.num_classes, input_shape=ds.input_shape, task=ds.task,
        cluster=part.cluster, group=part.group,
        loss_scale=draw_range(ds.loss_scale, n_clients, rng),
        augment=cfg["augment"] if augments(cfg["augment"]) else None, device=device)

"""Readers for the public file formats of the local-file datasets (``netsim.data.local``).

netsim never downloads: a user points ``data.root`` at their own copy. :class:`DataRoot` carries
that folder together with a description of what the loader expects in it, so that every problem
(null root, missing folder or file, malformed content) becomes one
``ConfigError("data.root", root, expected, problem)``.
"""
from __future__ import annotations

import gzip
import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from netsim.errors import ConfigError

IDX_UBYTE = 0x08        # IDX type code of unsigned bytes (the third byte of the magic number)


@dataclass(frozen=True)
class DataRoot:
    """``data.root`` as given (``root``) and what the dataset expects there (``expected``)."""

    root: str | None
    expected: str

    def error(self, problem: str) -> ConfigError:
        return ConfigError("data.root", self.root, self.expected, problem)

    @property
    def path(self) -> Path:
        """The folder itself; ConfigError when ``root`` is null or not a folder."""
        if self.root is None:
            raise self.error("data.root is null; netsim never downloads data: point it at your "
                             "copy")
        path = Path(self.root).expanduser()
        if not path.is_dir():
            raise self.error(f"{path} is not a folder")
        return path

    def find(self, names: list[str], subdirs: tuple[str, ...] = ("",),
             gz: bool = False) -> list[Path]:
        """Paths of all ``names`` in the first of ``root/<subdir>`` that holds every one of them
        (with ``gz``, ``name.gz`` also matches)."""
        base = self.path
        for sub in subdirs:
            found = [_existing(base / sub / name, gz) for name in names]
            if all(found):
                return found                                    # type: ignore[return-value]
        where = " or ".join(str(base / sub) for sub in subdirs)
        missing = [n for n in names if _existing(base / subdirs[0] / n, gz) is None]
        raise self.error(f"missing in {where}: {', '.join(missing)}")

    def pickle(self, path: Path, keys: tuple[bytes, ...]) -> dict:
        """A pickled dict with bytes keys (the python versions of CIFAR) holding ``keys``.

        Unpickling can run code: only point ``data.root`` at files you trust.
        """
        try:
            with open(path, "rb") as f:
                out = pickle.load(f, encoding="bytes")
        except Exception as exc:                                # any unreadable pickle
            raise self.error(f"{path}: not a readable pickle ({exc})") from None
        if not isinstance(out, dict) or any(k not in out for k in keys):
            raise self.error(f"{path}: not a dict with keys {[k.decode() for k in keys]}")
        return out

    def idx(self, path: Path, ndim: int) -> np.ndarray:
        """An IDX array of unsigned bytes with ``ndim`` dimensions, possibly gzipped: a big-endian
        magic ``0x000008<ndim>``, ``ndim`` big-endian uint32 sizes, then the data."""
        opener = gzip.open if path.suffix == ".gz" else open
        try:
            with opener(path, "rb") as f:
                raw = f.read()
        except (OSError, EOFError) as exc:
            raise self.error(f"{path}: unreadable ({exc})") from None
        header = 4 + 4 * ndim
        magic = int.from_bytes(raw[:4], "big") if len(raw) >= 4 else None
        if magic != (IDX_UBYTE << 8) + ndim or len(raw) < header:
            shown = "missing" if magic is None else f"0x{magic:08x}"
            raise self.error(f"{path}: not an IDX file of {ndim}-d unsigned bytes (magic {shown}, "
                             f"expected 0x{(IDX_UBYTE << 8) + ndim:08x})")
        dims = np.frombuffer(raw, ">u4", ndim, 4).astype(np.int64)
        if len(raw) - header != int(np.prod(dims)):
            raise self.error(f"{path}: {len(raw) - header} data bytes, the header says "
                             f"{' x '.join(map(str, dims))}")
        return np.frombuffer(raw, np.uint8, offset=header).reshape(dims)

    def json(self, path: Path) -> Any:
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError) as exc:
            raise self.error(f"{path}: not readable JSON ({exc})") from None

    def png(self, path: Path, size: tuple[int, int]) -> np.ndarray:
        """An image file as RGB uint8 ``[3, H, W]`` (greyscale converted); ``size`` is (H, W)."""
        from PIL import Image
        try:
            with Image.open(path) as img:
                arr = np.asarray(img.convert("RGB"))
        except OSError as exc:
            raise self.error(f"{path}: not a readable image ({exc})") from None
        if arr.shape[:2] != size:
            raise self.error(f"{path}: {arr.shape[0]}x{arr.shape[1]} pixels, expected "
                             f"{size[0]}x{size[1]}")
        return arr.transpose(2, 0, 1)


def _existing(path: Path, gz: bool) -> Path | None:
    for p in (path, path.with_name(path.name + ".gz")) if gz else (path,):
        if p.exists():
            return p
    return None


def read_cifar_batch(root: DataRoot, path: Path, label_keys: tuple[bytes, ...]
                     ) -> tuple[np.ndarray, list[np.ndarray]]:
    """One pickled CIFAR batch: images uint8 ``[n, 3, 32, 32]`` (``b"data"`` is ``[n, 3072]``,
    row-major R, G, B planes) and one int64 ``[n]`` array per label key."""
    d = root.pickle(path, (b"data", *label_keys))
    x = np.asarray(d[b"data"])
    labels = [np.asarray(d[k], np.int64) for k in label_keys]
    if x.dtype != np.uint8 or x.ndim != 2 or x.shape[1] != 3 * 32 * 32 \
            or any(y.shape != (len(x),) for y in labels):
        raise root.error(f"{path}: expected b'data' uint8 [n, 3072] and {len(label_keys)} label "
                         f"list(s) of length n, got data {x.dtype} {list(x.shape)}")
    return x.reshape(-1, 3, 32, 32), labels


def read_idx_pair(root: DataRoot, images: Path, labels: Path) -> tuple[np.ndarray, np.ndarray]:
    """IDX images and labels: uint8 ``[n, 1, H, W]`` and int64 ``[n]``."""
    x, y = root.idx(images, 3), root.idx(labels, 1)
    if len(x) != len(y):
        raise root.error(f"{images} holds {len(x)} images but {labels} {len(y)} labels")
    return x[:, None], y.astype(np.int64)


def read_leaf(root: DataRoot) -> tuple[list[str], list[Any], list[Any]]:
    """LEAF's JSON layout: every ``train/*.json`` then ``test/*.json`` (under root or root/data),
    each ``{"users": [...], "num_samples": [...], "user_data": {user: {"x": [...], "y": [...]}}}``.

    Returns the user of every sample, the samples' x and their y, in file order.
    """
    folders = root.find(["train", "test"], ("", "data"))
    users: list[str] = []
    xs: list[Any] = []
    ys: list[Any] = []
    for folder in folders:
        files = sorted(folder.glob("*.json"))
        if not files:
            raise root.error(f"no *.json files in {folder}")
        for path in files:
            data = root.json(path)
            try:
                for user in data["users"]:
                    x, y = data["user_data"][user]["x"], data["user_data"][user]["y"]
                    if len(x) != len(y):
                        raise ValueError(f"user {user!r} has {len(x)} x but {len(y)} y")
                    users += [user] * len(x)
                    xs += x
                    ys += y
            except (KeyError, TypeError, ValueError) as exc:
                raise root.error(f"{path}: not LEAF's {{users, user_data: {{user: {{x, y}}}}}} "
                                 f"layout ({type(exc).__name__}: {exc})") from None
    return users, xs, ys

"""Training-batch image augmentation (data.augment): batched random crop and horizontal flip."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from netsim.data import ClientData, build_client_data, validate_data
from netsim.data.augment import augment_images
from netsim.errors import ConfigError


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def images(m: int = 3, b: int = 5, c: int = 2, h: int = 6, w: int = 7) -> torch.Tensor:
    return torch.arange(m * b * c * h * w, dtype=torch.float32).reshape(m, b, c, h, w) + 1


def test_shapes_kept_and_deterministic():
    x = images()
    a = augment_images(x, gen(1), crop_padding=2, flip=True)
    assert a.shape == x.shape and a.dtype == x.dtype
    assert torch.equal(a, augment_images(x, gen(1), crop_padding=2, flip=True))
    assert not torch.equal(a, augment_images(x, gen(2), crop_padding=2, flip=True))
    assert torch.equal(augment_images(x, gen(0)), x)                # nothing asked: unchanged


@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_crop_is_a_shifted_window_of_the_padded_image(mode):
    x, p = images(), 2
    out = augment_images(x, gen(3), crop_padding=p, padding_mode=mode)
    m, b, c, h, w = x.shape
    padded = F.pad(x.flatten(0, 1), (p, p, p, p), mode=mode).view(m, b, c, h + 2 * p, w + 2 * p)
    h, w = x.shape[-2:]
    offsets = set()
    for m in range(x.shape[0]):
        for b in range(x.shape[1]):
            windows = [(dy, dx) for dy in range(2 * p + 1) for dx in range(2 * p + 1)
                       if torch.equal(out[m, b], padded[m, b, :, dy:dy + h, dx:dx + w])]
            assert windows, (m, b)
            offsets.add(windows[0])
    assert len(offsets) > 3                                         # per-sample offsets differ


def test_known_crop_of_a_known_image():
    x = torch.zeros(1, 1, 1, 4, 4)
    x[..., 0, 0] = 1.0                                              # top-left pixel
    outs = torch.stack([augment_images(x, gen(s), crop_padding=1)[0, 0, 0] for s in range(40)])
    seen = {tuple(torch.nonzero(o).flatten().tolist()) for o in outs}
    # offset (dy, dx) in {0, 1, 2}^2 moves the pixel to (1 - dy, 1 - dx), or crops it away
    assert seen <= {(1, 1), (1, 0), (0, 1), (0, 0), ()} and len(seen) == 5


def test_flip_reverses_width_only():
    x = images(2, 50)
    out = augment_images(x, gen(4), flip=True)
    flipped = torch.tensor([[torch.equal(out[m, b], x[m, b].flip(-1)) for b in range(50)]
                            for m in range(2)])
    kept = torch.tensor([[torch.equal(out[m, b], x[m, b]) for b in range(50)] for m in range(2)])
    assert (flipped ^ kept).all() and 20 < flipped.sum() < 80


def client_data(augment: dict | None) -> ClientData:
    x = {s: [np.random.default_rng(i).random((6, 3, 8, 8), dtype=np.float32) for i in range(2)]
         for s in ("train", "val", "test")}
    y = {s: [np.zeros(6, np.int64)] * 2 for s in x}
    return ClientData.from_clients(x, y, num_classes=2, input_shape=(3, 8, 8),
                                   task="classification", augment=augment)


def test_only_training_batches_are_augmented():
    aug = client_data({"crop_padding": 2, "flip": True})
    plain = client_data(None)
    for split in ("val", "test"):
        assert torch.equal(aug.sample_batch(split, 16, gen(5))[0],
                           plain.sample_batch(split, 16, gen(5))[0])
    xa, ya = aug.sample_batch("train", 16, gen(5), torch.tensor([1]))
    xp, yp = plain.sample_batch("train", 16, gen(5), torch.tensor([1]))
    assert xa.shape == xp.shape == (1, 16, 3, 8, 8) and torch.equal(ya, yp)
    assert not torch.equal(xa, xp)


def test_augment_validation():
    with pytest.raises(ConfigError) as e:
        validate_data({"dataset": "gaussian_mixture", "augment": {"flip": True}}, 2)
    assert e.value.field == "data.augment"
    with pytest.raises(ConfigError, match="data.augment.crop_padding"):
        validate_data({"dataset": "digits", "augment": {"crop_padding": -1}}, 2)
    with pytest.raises(ConfigError, match="data.augment.rotate"):
        validate_data({"dataset": "digits", "augment": {"rotate": 10}}, 2)
    assert validate_data({"dataset": "gaussian_mixture", "augment": {"crop_padding": 0}}, 2)


def test_build_client_data_passes_augment():
    cfg = {"dataset": "digits", "augment": {"crop_padding": 1}}
    assert build_client_data(cfg, 2, np.random.default_rng(0)).augment == {
        "crop_padding": 1, "padding_mode": "constant", "flip": False}
    assert build_client_data({"dataset": "digits"}, 2, np.random.default_rng(0)).augment is None

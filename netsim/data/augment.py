"""Image augmentation of training mini-batches (``data.augment``), batched over clients and samples.

The CIFAR recipe: a random crop of the image padded by ``crop_padding`` pixels on each side (zeros,
or the reflected border as CoBo's code, ``padding_mode: reflect``), then a random horizontal flip. Both are one gather: sample s reads rows ``dy_s + h`` and columns
``dx_s + w`` (or ``dx_s + W - 1 - w`` when flipped) of the padded image, with offsets
``dy_s, dx_s ~ U{0, ..., 2 p}`` and flips ~ Bernoulli(1/2) drawn from the batch's generator.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from netsim.schema import Field

AUGMENT_FIELDS = {
    "crop_padding": Field("int", 0, "random crop of the zero-padded image, padding in pixels "
                          "(CIFAR: 4); 0 = no crop", lo=0),
    "padding_mode": Field("str", "constant", "padding of the crop: zeros (torchvision's default) "
                          "or the reflected border (CoBo's code)", choices=("constant", "reflect")),
    "flip": Field("bool", False, "random horizontal flip"),
}


def augments(spec: dict) -> bool:
    """Whether a resolved ``data.augment`` spec changes anything."""
    return spec["crop_padding"] > 0 or spec["flip"]


def augment_images(x: torch.Tensor, gen: torch.Generator, crop_padding: int = 0,
                   flip: bool = False, padding_mode: str = "constant") -> torch.Tensor:
    """Randomly crop (padding ``crop_padding``, ``padding_mode``) and flip images
    ``x[..., C, H, W]``, each sample independently, drawing from ``gen``; returns a new tensor of
    the same shape."""
    lead, (c, h, w) = x.shape[:-3], x.shape[-3:]
    imgs = x.reshape(-1, c, h, w)
    s, p, dev = len(imgs), crop_padding, x.device
    if p:
        imgs = F.pad(imgs, (p, p, p, p), mode=padding_mode)
        dy, dx = torch.randint(0, 2 * p + 1, (2, s, 1), generator=gen, device=dev)
    else:
        dy = dx = torch.zeros(s, 1, dtype=torch.int64, device=dev)
    cols = torch.arange(w, device=dev).expand(s, w)
    if flip:
        flipped = torch.rand(s, 1, generator=gen, device=dev) < 0.5
        cols = torch.where(flipped, w - 1 - cols, cols)
    rows = dy + torch.arange(h, device=dev)
    out = imgs[torch.arange(s, device=dev)[:, None, None, None],
               torch.arange(c, device=dev)[None, :, None, None],
               rows[:, None, :, None], (dx + cols)[:, None, None, :]]
    return out.reshape(*lead, c, h, w)

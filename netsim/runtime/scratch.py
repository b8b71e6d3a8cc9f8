"""Work buffers kept between steps, so that a step makes no ``[N, d]`` temporary.

A fresh large tensor costs more than the arithmetic on it: glibc serves allocations above its
mmap threshold (at most 32 MB) with fresh pages, one page fault per 4 kB, so at N = 1,000 an
``[N, d]`` float64 temporary (d = 4,810: 38 MB) costs about 19 ms against 2 ms for the operation
that fills it (the mixed-precision ``add_``/``div`` of push-sum: PyTorch casts through such a
temporary). Holders of a :class:`Scratch` write into its buffers instead.
"""
from __future__ import annotations

import torch
from torch import Tensor


class Scratch:
    """One buffer per (shape, dtype, device), allocated on first use; contents are undefined
    between uses. Not pickled: a holder restored from a checkpoint starts with none."""

    def __init__(self):
        self._buffers: dict[tuple, Tensor] = {}

    def like(self, t: Tensor, dtype: torch.dtype | None = None) -> Tensor:
        """A buffer of ``t``'s shape and device, in ``dtype`` (default ``t``'s)."""
        key = (tuple(t.shape), dtype or t.dtype, t.device)
        if key not in self._buffers:
            self._buffers[key] = torch.empty(key[0], dtype=key[1], device=key[2])
        return self._buffers[key]

    def __getstate__(self) -> dict:
        return {"_buffers": {}}
